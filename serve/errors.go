package serve

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"

	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/db"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/serve/chatcompletions"
	"github.com/memcascade/memcascade/serve/dialect"
)

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

// codeStatus is the one table of the error codes and the HTTP status each is answered with,
// in every dialect.
var codeStatus = map[memory.Code]int{
	memory.CodeInvalid:     http.StatusBadRequest,
	memory.CodeNotFound:    http.StatusNotFound,
	memory.CodeConflict:    http.StatusConflict,
	memory.CodeOverLimit:   http.StatusBadRequest,
	memory.CodeUnavailable: http.StatusServiceUnavailable,
	memory.CodeInternal:    http.StatusInternalServerError,

	CodeUnauthenticated: http.StatusUnauthorized,
	CodeForbidden:       http.StatusForbidden,
	CodeNoRoute:         http.StatusNotFound,
	CodeUnsupported:     http.StatusUnsupportedMediaType,
	CodeTooLarge:        http.StatusRequestEntityTooLarge,
	CodeTimeout:         http.StatusRequestTimeout,
	CodeLoop:            http.StatusLoopDetected,
	CodeUpstream:        http.StatusBadGateway,
}

// openAI is the dialect of serve's own routes (the inspection API, the guards before a route
// is known): their errors are in OpenAI's shape.
var openAI dialect.Dialect = chatcompletions.Dialect{}

// writeCode writes an error of code in OpenAI's shape with its status of codeStatus; detail is
// OpenAI's code field ("" for null).
func writeCode(w http.ResponseWriter, code memory.Code, detail, msg, param string) {
	writeCodeIn(w, openAI, code, detail, msg, param)
}

// writeCodeIn writes an error of code in d's shape, with its status of codeStatus.
func writeCodeIn(w http.ResponseWriter, d dialect.Dialect, code memory.Code, detail, msg, param string) {
	status, ok := codeStatus[code]
	if !ok {
		code, status = memory.CodeInternal, http.StatusInternalServerError
	}
	d.WriteError(w, status, code, detail, msg, param)
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

// Error writes err in OpenAI's shape with the status of its memory.Code (an error of no code
// of the domain is internal: 500). OpenAI's code field names it as errorDetails does, else by
// its code ("internal_error" for internal).
func Error(w http.ResponseWriter, err error) { errorIn(w, openAI, err) }

// errorIn writes err as Error does, in d's shape.
func errorIn(w http.ResponseWriter, d dialect.Dialect, err error) {
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
	writeCodeIn(w, d, code, detail, err.Error(), "")
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
