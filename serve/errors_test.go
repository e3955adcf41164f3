package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/db"
	"github.com/memcascade/memcascade/memory"
)

// TestCodeStatusEveryCode: every memory.Code has its HTTP status in the one table, and Error
// answers a domain error with its code's status and the detail that names it.
func TestCodeStatusEveryCode(t *testing.T) {
	t.Parallel()
	for _, c := range Codes {
		if _, ok := codeStatus[c]; !ok {
			t.Errorf("code %q has no HTTP status", c)
		}
	}
	for _, tc := range []struct {
		err    error
		status int
		detail string
	}{
		{fmt.Errorf("x: %w", memory.ErrThreadNotFound), http.StatusNotFound, "thread_not_found"},
		{memory.ErrPinRefused, http.StatusConflict, "pin_refused"},
		{&memory.InputError{Msg: "bad"}, http.StatusBadRequest, "invalid_message"},
		{db.ErrNewerSchema, http.StatusInternalServerError, "newer_schema"},
		{fmt.Errorf("disk full"), http.StatusInternalServerError, "internal_error"},
		// errors no detail names still take their code's status
		{fmt.Errorf("append: %w", memory.ErrStale), http.StatusConflict, "conflict"},
		{memory.NewError(memory.CodeUnavailable, "no provider"), http.StatusServiceUnavailable, "unavailable"},
	} {
		rec := httptest.NewRecorder()
		Error(rec, tc.err)
		var body struct {
			Error struct{ Code string } `json:"error"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatal(err)
		}
		if rec.Code != tc.status || body.Error.Code != tc.detail {
			t.Errorf("Error(%v) = %d %q, want %d %q", tc.err, rec.Code, body.Error.Code, tc.status, tc.detail)
		}
	}
}

// TestWriteCodeEveryCode walks every memory.Code: writeCode answers it with the status and
// OpenAI error type written here (the one table, codeStatus, is what is checked), keeping the
// message and the detail it is given.
func TestWriteCodeEveryCode(t *testing.T) {
	want := map[memory.Code]struct {
		status int
		typ    string
	}{
		memory.CodeInvalid:     {400, "invalid_request_error"},
		memory.CodeNotFound:    {404, "not_found_error"},
		memory.CodeConflict:    {409, "invalid_request_error"},
		memory.CodeOverLimit:   {400, "invalid_request_error"},
		memory.CodeUnavailable: {503, "server_error"},
		memory.CodeInternal:    {500, "server_error"},
		CodeUnauthenticated:    {401, "invalid_request_error"},
		CodeForbidden:          {403, "permission_error"},
		CodeNoRoute:            {404, "invalid_request_error"},
		CodeUnsupported:        {415, "invalid_request_error"},
		CodeTooLarge:           {413, "invalid_request_error"},
		CodeTimeout:            {408, "invalid_request_error"},
		CodeLoop:               {508, "invalid_request_error"},
		CodeUpstream:           {502, "upstream_error"},
	}
	if len(want) != len(Codes) {
		t.Errorf("%d codes expected here, Codes has %d", len(want), len(Codes))
	}
	for _, c := range Codes {
		w, ok := want[c]
		if !ok {
			t.Errorf("code %q: no expected status in this test", c)
			continue
		}
		rec := httptest.NewRecorder()
		writeCode(rec, c, "some_detail", "the message", "")
		var body struct {
			Error struct {
				Message, Type string
				Code          *string
			} `json:"error"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("code %q: %v: %s", c, err, rec.Body)
		}
		e := body.Error
		if rec.Code != w.status || e.Type != w.typ || e.Message != "the message" || e.Code == nil || *e.Code != "some_detail" {
			t.Errorf("code %q: %d %s, want %d, type %q, the message and the detail", c, rec.Code, rec.Body, w.status, w.typ)
		}
	}
}

// TestWriteErrorOnlyThroughTable: no file of the package writes an error answer with a status
// of its own; every one goes through writeCodeIn (writeCode is it in OpenAI's shape) and its
// table, in the dialect of the request.
func TestWriteErrorOnlyThroughTable(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n := strings.Count(string(b), "WriteError(")
		if f == "errors.go" {
			n-- // writeCodeIn's call
		}
		if n != 0 {
			t.Errorf("%s: %d direct WriteError calls; answer through writeCodeIn", f, n)
		}
	}
}
