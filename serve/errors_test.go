package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/memcascade/memcascade/memory"
)

// TestCodeStatusEveryCode: every memory.Code has its HTTP status in the one table, and Error
// answers a domain error with its code's status and the detail that names it.
func TestCodeStatusEveryCode(t *testing.T) {
	t.Parallel()
	for _, c := range memory.Codes {
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
		{memory.ErrNewerSchema, http.StatusInternalServerError, "newer_schema"},
		{fmt.Errorf("disk full"), http.StatusInternalServerError, "internal_error"},
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
