// Package facts keeps a ledger of the facts a summary must not drop.
//
// When memcascade compacts a conversation, a model summarises its middle. Models drop
// exact strings: a reservation id, a file path, a dollar amount, the user's "never book
// basic economy". [Extract] reads the messages and returns a deterministic ledger of such
// facts; [Kept] checks which of them a summary still holds; [Section] renders the missing
// ones as a compact "Key facts" list to append to the summary, within a token budget.
//
// # What is extracted
//
// System and developer messages are skipped (they are pinned and kept anyway). User,
// assistant and tool messages are read, and so are the arguments of assistant tool calls.
// A message whose content is a JSON object or array is walked: keys are not facts, string
// values are read as text, and a few keys give their value a kind (id, *_id, flight_number
// and the like make an id; amount, price, total, balance, refund, fee, *_amount make an
// amount of a number; error and error.message make an error).
//
//   - constraint: a sentence of a user message (outside code fences) with must, must not,
//     don't, do not, does not, never, always, only, at least, at most, no more than, no
//     less than, no later than, prefer, need to, without, cannot, can't, should, make sure,
//     ensure, instead of, rather than, avoid, not allowed or unless; cut to 160 characters
//     (at a word), without its final period.
//   - error: a line that starts like an error (ValueError: ..., Error: ..., error[E0308]:,
//     fatal:, FAILED ..., npm ERR!, file.go:12:3: undefined: ...), and in tool output also
//     a line with exit status N, HTTP 404, 500 Internal Server Error, command not found,
//     No such file or directory, Permission denied, timed out, N failed, failed to ...;
//     cut to 120 characters. Numbered file listings ("1466:  raise ValueError(msg)") are
//     code and yield no error. A Traceback header yields nothing; its exception line does.
//   - tool_call: name(key=value, ...) for each assistant tool call, with its scalar
//     arguments in order; string values longer than 40 characters are cut and end in "…".
//     Nested arrays and objects are not shown; the ids and dates inside them are facts of
//     their own.
//   - id: a UUID; a git SHA after commit/sha/revision/hash, or any 40-hex string; #1867 and
//     #W2378156; hyphenated upper-case ids with a numeric tail (CVE-2024-1234, JIRA-1234);
//     snake_case ids ending in 3+ digits (mia_li_3668, credit_card_2929732); a token after
//     order/reservation/booking/confirmation/ticket/... that has a digit; and a token of
//     letters and digits with a capital: all capitals and digits from 5 characters (ZFA04Y,
//     4OG6T3, HAT136), or mixed case from 8 with two capitals and two digits. Technical
//     names (SHA256, UTF16, ISO8601, ...) are not ids.
//   - digest: a digest with its algorithm (sha256:9f86..., sha256=..., npm's sha512-...,
//     go.sum's h1:..., md5:...), a run of 32, 64 or 128 hex digits in one case with a digit
//     (an md5, sha256 or sha512 hex string), 0x and 40 hex digits (an address). Taken before
//     dates and amounts, so no digit of it is read again; a 40-hex string is an id.
//   - version: three numbers or more, semver's pre-release and build included (2.31.0,
//     v1.26.8, 1.4.0-rc.2, v0.0.0-20240515143000-a94a8fe5ccb1), not four (an IP address);
//     in user text and tool arguments only (an install log lists many).
//   - amount: $1,286, €30, EUR 30, 1,286 USD, 12 dollars, $1.2M; not $1 (a shell argument).
//   - percent: 15%, 2.5 percent (in tool output not [ 50%] or 100%| progress).
//   - date: 2024-05-15 (a date-time gives its date), May 15, 2024, May 15, 15 May 2024,
//     2024/05/15, 15/05/2024, 15.05.2024.
//   - path: absolute, home and relative paths with at least one '/' whose last part has an
//     extension (src/marshmallow/fields.py, ~/.bashrc), and Windows paths (C:\x\y). Paths
//     inside URLs are part of the URL.
//   - url: http(s), ftp, file, ws(s), s3, gs, ssh and git URLs, without trailing
//     punctuation. email: addresses.
//   - time: 15:00, 3:30 pm, 3pm; in user and assistant text and tool arguments only (tool
//     output is full of schedule listings).
//   - quantity: a number with a unit: 12 kg, 3.5 GB, 200 ms, 2 bags, 45 minutes, 3 nights.
//
// Each extractor masks what it takes, in the order above from urls on, so a reservation
// id in a URL or the digits of a date are not taken again.
//
// # Ledger rules
//
// Facts are deduplicated per kind by normalised text (case, whitespace, thousands
// separators); dates by the day they name (2024-05-13 and May 13, 2024 are one fact,
// shown as first seen), amounts by their number, quantities without the space before the
// unit. A fact contained in a longer fact of another kind is kept as its own fact: ids
// are matched individually, so the id JG7FMM is a fact besides
// get_reservation_details(reservation_id=JG7FMM) and the error that names it.
//
// Weights: constraint 90 > error 70 > id, digest, version and tool_call 50 > amount, percent, date, path,
// url, email 30 > time and quantity 10. A tool call with nothing to check but its name
// (all arguments long, or none) weighs 30. Bonuses: +3 when the user or the assistant said
// it or passed it to a tool (rather than a tool printing it), and +1 for each further
// message that mentions it, at most +4; a bonus never lifts a fact into the tier above.
// A one-word value of a JSON document keeps the key it was first seen under (Fact.Key:
// reservation_id, dob, price) and the record it belongs to (Fact.Of: the object's first id
// field, flight_number HAT080, else its names); [Section] renders a record's values on its
// line and other keyed values under their key, so a summary says what each value is.
//
// The ledger is ordered by weight, then by the message it was first seen in, then kind,
// then text: the same messages always give the same ledger.
//
// The package owns fact extraction and the check that a summary keeps them. It imports only
// package transcript (FromTranscript converts its messages), and must not import memory,
// cascade or anything that stores data or sends requests.
package facts
