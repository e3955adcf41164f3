package memory

import "errors"

// Code is the kind of an error, shared by every caller that turns errors into answers:
// memctl serve maps each code to an HTTP status in one table, memctl to an exit code in one.
// ErrorCode finds it.
type Code string

// Error codes; Codes lists them all.
const (
	CodeInvalid     Code = "invalid"     // the input or the settings are wrong: fix them and ask again
	CodeNotFound    Code = "not_found"   // the thread, compaction or message does not exist
	CodeConflict    Code = "conflict"    // the state changed or forbids it (a race, a refused pin or revert)
	CodeOverLimit   Code = "over_limit"  // the active context is still over its token limit
	CodeUnavailable Code = "unavailable" // no provider could do the work; the data is unchanged
	CodeInternal    Code = "internal"    // anything else: a defect, the database, the file system
)

// Codes is every error code, the one list of them.
var Codes = []Code{CodeInvalid, CodeNotFound, CodeConflict, CodeOverLimit, CodeUnavailable, CodeInternal}

// errorCodes is the one table of this package's errors and their codes, first match wins.
var errorCodes = []struct {
	match func(error) bool
	code  Code
}{
	{isErr(ErrThreadNotFound), CodeNotFound},
	{isErr(ErrCompactionNotFound), CodeNotFound},
	{isErr(ErrMessageNotFound), CodeNotFound},
	{isErr(ErrNotPinned), CodeNotFound},
	{isErr(ErrPinRefused), CodeConflict},
	{isErr(ErrNotLatest), CodeConflict},
	{isErr(ErrConflict), CodeConflict},
	{isErr(ErrStale), CodeConflict},
	{asErr[*InputError], CodeInvalid},
	{asErr[*SettingError], CodeInvalid},
	{isErr(ErrNoMessages), CodeInvalid},
	{isErr(ErrOverLimit), CodeOverLimit},
	{isErr(ErrSummarize), CodeUnavailable},
}

func isErr(target error) func(error) bool {
	return func(err error) bool { return errors.Is(err, target) }
}

func asErr[T error](err error) bool {
	var t T
	return errors.As(err, &t)
}

// ErrorCode is the code of err: "" for nil, CodeInternal for an error of no known kind.
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	for _, c := range errorCodes {
		if c.match(err) {
			return c.code
		}
	}
	return CodeInternal
}
