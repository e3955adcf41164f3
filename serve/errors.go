package serve

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"

	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/db"
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
// Only writeCode calls it: every error answer takes its status and type from codeStatus.
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
// which OpenAI's clients raise as an error; no data: [DONE] follows it. The stream's status is
// already sent; the type is CodeUpstream's in codeStatus.
func writeErrorEvent(w http.ResponseWriter, code, msg string) {
	b, _ := json.Marshal(map[string]apiError{"error": {Message: msg, Type: codeStatus[CodeUpstream].typ, Code: &code}})
	w.Write([]byte("data: "))
	w.Write(b)
	w.Write([]byte("\n\n"))
}

// The codes of what serve refuses before the domain sees a request; no error of memory or
// compact has them. Codes lists them with the domain's.
const (
	CodeUnauthenticated memory.Code = "unauthenticated" // the request's credentials are missing or wrong
	CodeForbidden       memory.Code = "forbidden"       // the request comes from where it may not (another site, a foreign host)
	CodeNoRoute         memory.Code = "no_route"        // no handler for the method and path
	CodeUnsupported     memory.Code = "unsupported"     // the request's media type is not one the server reads
	CodeTooLarge        memory.Code = "too_large"       // the request is over a size bound
	CodeTimeout         memory.Code = "timeout"         // the request did not arrive in time
	CodeLoop            memory.Code = "loop"            // the request came back to the server that sent it
	CodeUpstream        memory.Code = "upstream"        // the upstream model could not be reached or answered badly
)

// Codes is every code serve answers with: the domain's (memory.Codes), then its own.
var Codes = append(slices.Clone(memory.Codes), CodeUnauthenticated, CodeForbidden, CodeNoRoute, CodeUnsupported,
	CodeTooLarge, CodeTimeout, CodeLoop, CodeUpstream)

// codeStatus is the one table of memory's error codes and the HTTP status and OpenAI error type
// each is answered with.
var codeStatus = map[memory.Code]struct {
	status int
	typ    string
}{
	memory.CodeInvalid:     {http.StatusBadRequest, "invalid_request_error"},
	memory.CodeNotFound:    {http.StatusNotFound, "not_found_error"},
	memory.CodeConflict:    {http.StatusConflict, "invalid_request_error"},
	memory.CodeOverLimit:   {http.StatusBadRequest, "invalid_request_error"},
	memory.CodeUnavailable: {http.StatusServiceUnavailable, "server_error"},
	memory.CodeInternal:    {http.StatusInternalServerError, "server_error"},

	CodeUnauthenticated: {http.StatusUnauthorized, "invalid_request_error"},
	CodeForbidden:       {http.StatusForbidden, "permission_error"},
	CodeNoRoute:         {http.StatusNotFound, "invalid_request_error"},
	CodeUnsupported:     {http.StatusUnsupportedMediaType, "invalid_request_error"},
	CodeTooLarge:        {http.StatusRequestEntityTooLarge, "invalid_request_error"},
	CodeTimeout:         {http.StatusRequestTimeout, "invalid_request_error"},
	CodeLoop:            {http.StatusLoopDetected, "invalid_request_error"},
	CodeUpstream:        {http.StatusBadGateway, "upstream_error"},
}

// writeCode writes an error of code in OpenAI's shape, with the status and type of codeStatus;
// detail is OpenAI's code field ("" for null).
func writeCode(w http.ResponseWriter, code memory.Code, detail, msg, param string) {
	cs, ok := codeStatus[code]
	if !ok {
		cs = codeStatus[memory.CodeInternal]
	}
	writeError(w, cs.status, cs.typ, detail, msg, param)
}

// errorDetails names, in OpenAI's code field, the domain's errors serve tells apart; the status
// and type are their memory.Code's.
var errorDetails = []struct {
	match  func(error) bool
	detail string
}{
	{is(memory.ErrThreadNotFound), "thread_not_found"},
	{is(memory.ErrCompactionNotFound), "compaction_not_found"},
	{is(memory.ErrMessageNotFound), "message_not_found"},
	{is(memory.ErrNotPinned), "not_pinned"},
	{is(memory.ErrPinRefused), "pin_refused"},
	{as[*memory.InputError], "invalid_message"},
	{as[*compact.SettingError], "invalid_settings"},
	{is(db.ErrNewerSchema), "newer_schema"},
}

func is(target error) func(error) bool { return func(err error) bool { return errors.Is(err, target) } }

func as[T error](err error) bool {
	var t T
	return errors.As(err, &t)
}

// Error writes err in OpenAI's shape with the status and type of its memory.Code (an error of
// no code of the domain is internal: 500). OpenAI's code field names it as errorDetails does,
// else by its code ("internal_error" for internal).
func Error(w http.ResponseWriter, err error) {
	code := memory.ErrorCode(err)
	detail := string(code)
	if code == memory.CodeInternal {
		detail = "internal_error"
	}
	for _, d := range errorDetails {
		if d.match(err) {
			detail = d.detail
			break
		}
	}
	writeCode(w, code, detail, err.Error(), "")
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
