package serve

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/memcascade/memcascade/memory"
)

// apiError is OpenAI's error shape: {"error": {"message", "type", "param", "code"}}.
type apiError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// writeError writes an error in OpenAI's shape. param and code may be "" (written as null).
func writeError(w http.ResponseWriter, status int, typ, code, msg, param string) {
	e := apiError{Message: msg, Type: typ}
	if param != "" {
		e.Param = &param
	}
	if code != "" {
		e.Code = &code
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]apiError{"error": e})
}

// writeErrorEvent ends a stream with an error event in OpenAI's shape (data: {"error": {...}}),
// which OpenAI's clients raise as an error; no data: [DONE] follows it.
func writeErrorEvent(w http.ResponseWriter, code, msg string) {
	b, _ := json.Marshal(map[string]apiError{"error": {Message: msg, Type: "upstream_error", Code: &code}})
	w.Write([]byte("data: "))
	w.Write(b)
	w.Write([]byte("\n\n"))
}

// errorKinds maps the domain's errors to an HTTP status, an OpenAI error type and a code.
var errorKinds = []struct {
	match  func(error) bool
	status int
	typ    string
	code   string
}{
	{is(memory.ErrThreadNotFound), http.StatusNotFound, "not_found_error", "thread_not_found"},
	{is(memory.ErrCompactionNotFound), http.StatusNotFound, "not_found_error", "compaction_not_found"},
	{is(memory.ErrMessageNotFound), http.StatusNotFound, "not_found_error", "message_not_found"},
	{is(memory.ErrNotPinned), http.StatusNotFound, "not_found_error", "not_pinned"},
	{is(memory.ErrPinRefused), http.StatusConflict, "invalid_request_error", "pin_refused"},
	{as[*memory.InputError], http.StatusBadRequest, "invalid_request_error", "invalid_message"},
	{as[*memory.SettingError], http.StatusBadRequest, "invalid_request_error", "invalid_settings"},
	{is(memory.ErrNewerSchema), http.StatusInternalServerError, "server_error", "newer_schema"},
}

func is(target error) func(error) bool { return func(err error) bool { return errors.Is(err, target) } }

func as[T error](err error) bool {
	var t T
	return errors.As(err, &t)
}

// Error writes err in OpenAI's shape with the status its kind maps to (500 when unknown).
func Error(w http.ResponseWriter, err error) {
	for _, k := range errorKinds {
		if k.match(err) {
			writeError(w, k.status, k.typ, k.code, err.Error(), "")
			return
		}
	}
	writeError(w, http.StatusInternalServerError, "server_error", "internal_error", err.Error(), "")
}

// writeJSON writes v as indented JSON, as memctl --json prints it.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		Error(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
