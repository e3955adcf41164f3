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

// Codes is every error code of the domain, the one list of them. A host adds its own codes
// for what it refuses before the domain sees a request (memctl serve: serve.Codes).
var Codes = []Code{CodeInvalid, CodeNotFound, CodeConflict, CodeOverLimit, CodeUnavailable, CodeInternal}

// errorCodes is the one table of this package's errors and their codes, first match wins. The
// order matters where one error joins two: a compaction whose summary failed and whose context
// then stayed over the limit returns errors.Join(cause, err), cause wrapping
// compact.ErrSummarize and err compact.ErrOverLimit (compact's job.reshape), and that is
// over_limit, as the row for CodeOverLimit comes before the others NewError's errors match.
// The errors NewError makes are found by their code, wherever they are declared (init adds a
// row for each code after these).
var errorCodes = []struct {
	match func(error) bool
	code  Code
}{
	{isErr(ErrThreadNotFound), CodeNotFound},
	{isErr(ErrCompactionNotFound), CodeNotFound},
	{isErr(ErrMessageNotFound), CodeNotFound},
	{isErr(ErrNotPinned), CodeNotFound},
	{isErr(ErrPinRefused), CodeConflict},
	{isErr(errNotLatest), CodeConflict},
	{isErr(errConflict), CodeConflict},
	{isErr(ErrStale), CodeConflict},
	{asErr[*InputError], CodeInvalid},
	{says(CodeInvalid), CodeInvalid}, // compact.SettingError
	{isErr(errNoMessages), CodeInvalid},
	{isErr(kindOf(CodeOverLimit)), CodeOverLimit}, // compact.ErrOverLimit
}

func init() {
	for _, c := range Codes { // compact.ErrSummarize (unavailable), and any other code's
		if c != CodeOverLimit {
			errorCodes = append(errorCodes, struct {
				match func(error) bool
				code  Code
			}{isErr(kindOf(c)), c})
		}
	}
}

// NewError returns an error whose text is text and whose code is code: ErrorCode finds code
// for it, and for any error that wraps it, at the row of the table that matches code's errors
// (see errorCodes). Each call makes a distinct error: errors.Is tells two apart even when their
// codes are the same.
func NewError(code Code, text string) error { return &kindError{code: code, text: text} }

// kindError is an error NewError made.
type kindError struct {
	code Code
	text string
}

func (e *kindError) Error() string { return e.text }

// Is reports whether target is the kind of e, kindOf(e.code).
func (e *kindError) Is(target error) bool { return target == error(kindOf(e.code)) }

// kindOf is the kind of the errors NewError makes with a code: errors.Is(err, kindOf(code))
// reports whether err is, or wraps, one of them.
type kindOf Code

func (k kindOf) Error() string { return string(k) }

func isErr(target error) func(error) bool {
	return func(err error) bool { return errors.Is(err, target) }
}

// coder is an error of another package that says its own code (compact.SettingError says
// invalid).
type coder interface{ Code() Code }

// says matches an error that says it has code c (coder).
func says(c Code) func(error) bool {
	return func(err error) bool {
		var k coder
		return errors.As(err, &k) && k.Code() == c
	}
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
