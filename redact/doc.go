// Package redact removes secrets from text before it leaves the machine.
//
// memcascade sends the middle of a conversation to summarising providers, some of them
// remote. Conversations of coding and tool-using agents routinely contain API keys, tokens,
// passwords and connection strings (pasted by the user, printed by a tool, read from a .env
// file). A [Redactor] replaces each of them with a marker naming its kind:
//
//	OPENAI_API_KEY=sk-proj-Ab3...   ->  OPENAI_API_KEY=[REDACTED:openai_key]
//	Authorization: Bearer 4f9a...   ->  Authorization: Bearer [REDACTED:bearer_token]
//	"password": "hunter2"           ->  "password": "[REDACTED:password]"
//	postgres://app:s3cret@db:5432   ->  postgres://[REDACTED:connection_string]@db:5432
//
// # Rules
//
//   - Only the secret is replaced: key names, the word Bearer, quotes, URL schemes and hosts
//     stay, so the summary still says what the secret was for. A PEM private key block is
//     replaced whole, from its BEGIN line to its END line (or to the end of the text when the
//     END line was cut off).
//   - Token formats with a distinctive prefix (sk-, sk-ant-, ghp_, github_pat_, glpat-, xox?-,
//     sk_live_, whsec_, AKIA, AIza, GOCSPX-, hf_, SG., npm_, pypi-, dop_v1_, hvs., glsa_,
//     AGE-SECRET-KEY-1, eyJ... and about sixty more, see formats.go) are matched by their
//     format. Private keys are replaced whole in every armor: PEM (RSA, EC, DSA, ENCRYPTED,
//     OPENSSH, PGP), SSH2, PuTTY and age. A 40-character base64 string shaped like an AWS
//     secret access key is replaced even with no label.
//   - Any key, header or flag whose name says secret (password, passwd, pwd, pass, secret,
//     token, api_key, access_key, private_key, auth, credential, cookie, session, sig,
//     signature, in any case and separator: DB_PASSWORD, dbPassword, X-Api-Key,
//     x_auth_token) has its value replaced whole: a quoted value to its closing quote
//     (escapes and JSON inside JSON included), a header or YAML value to the end of its
//     line, other bare values to the end of the token. Connection strings (URL userinfo,
//     user:pw@tcp(...), Password=/Pwd=/AccountKey=/SharedAccessKey=/sig= pairs) and
//     credentials on command lines (curl -u, mysql -p, sshpass -p, redis-cli -a,
//     --password X, -passin pass:X) are replaced too.
//   - Values of assignments whose key names a secret (password, passwd, passphrase, secret,
//     client_secret, api_key, access_token, token, private_key, ...; in the forms key=value,
//     key: value, "key": "value", --key value) are replaced, with checks that keep ordinary
//     prose and code intact: "I forgot my password yesterday", `password: str`,
//     `password=request.form["password"]`, `"token": null`, `max_token=512`,
//     `password=${DB_PASSWORD}` and `password: <your password>` are left alone. After a colon
//     an unquoted value is replaced only when it ends the line or looks like a secret (digits,
//     symbols or inner capitals), so "Password: must be 8 characters" stays.
//   - Labels without an assignment are read too, with the value held to look like what the
//     label names: "my password is X", "the password is: X", "auth token X", "API key X",
//     "devops PAT X", .netrc "login bob password X", a Dockerfile's "ENV DB_PASSWORD X",
//     SQL "IDENTIFIED BY 'X'", "PASSWORD 'X'" and "SET PASSWORD FOR u = 'X'", a full-width
//     colon (password：X), and a YAML value on the lines below its key (password: |,
//     password: >-, or an indented plain scalar). Credential flags are known per command:
//     curl/wget/httpie -u and --user user:X, smbclient -U user%X, ldapsearch -w X,
//     openssl -k X, zip -P X, 7z -pX, sqlcmd -P X, mongosh -p X, htpasswd -b file user X,
//     net use ... /user:name X.
//   - Encoded and cut secrets: a base64 blob that decodes to a PEM private key
//     (kubeconfig client-key-data; certificates stay), a PEM body whose BEGIN line went in
//     an earlier message (base64 lines before an END ... PRIVATE KEY line, or two or more
//     64-byte base64 lines ending in a shorter one; a 64-wide base64 dump of any file is
//     taken too), a JWT broken over lines, percent-encoded URL userinfo, and base64 of
//     user:password after "Basic" or, with no label, when it ends in '=' padding.
//     Beyond those, a base64 or hex run of 16 bytes or more whose first characters show it
//     decodes to ASCII is decoded, and replaced whole when the rules find a secret in the
//     printable text it decodes to (see encoded.go); most word-like runs are dismissed by
//     that first test without decoding.
//   - What only a conversation shows ([Context], [Redactor.RedactConversation]): a bare
//     value a user types after a message asking for a password, PIN, token or key, and a
//     prefixed token cut by the end of a message, a content part or a line.
//   - Evasions are undone before matching, on a copy: string escapes (\u0070assword, \x70,
//     surrogate pairs), HTML character references (p&#97;ssword, &quot;), percent-encoded
//     bytes (password%3DX), invisible characters (zero-width spaces and joiners, the soft
//     hyphen, the byte order mark, bidirectional controls) dropped, full-width forms and
//     mathematical letters folded to ASCII, Cyrillic and Greek look-alike letters folded to
//     Latin. A secret found in the copy is replaced in the original, whole, from its first
//     byte to its last (escapes and invisible characters included); the rest of the text is
//     kept byte for byte.
//   - Formats without a prefix are taken only with their label: the newer Mailgun key
//     (32-8-8 hex) within 200 bytes after "mailgun", an Azure DevOps PAT (52 base32
//     characters) after PAT or a key ending in _PAT; bare, they cannot be told from other
//     ids.
//   - A value under a key named session (session_id, sessionid) stays redacted even when it
//     looks like an order number: the key says it is a session credential. A 40-byte value
//     under a key naming an id or digest (etag, sha, hash, digest, checksum, commit, id,
//     ...) is not taken for an AWS secret key, and a test runner's "pass: 97 tests" count
//     is no password.
//   - Generic strings (UUIDs, git SHAs, reservation ids, file paths, URLs without
//     credentials, "risk-free") are never redacted: only formats and contexts that mark a
//     secret are.
//   - Redaction is idempotent: text inside a marker is never matched again, so redacting
//     redacted text changes nothing.
//   - Redact is fast on ordinary text: one scan finds where the literal anchors of all the
//     built-in patterns occur (sk-, ghp_, ://, password, ...), and each pattern's regular
//     expression is tried only there, so no pattern makes more than one pass and none runs
//     at every byte. Extra patterns make one FindAll pass each.
//
// A Redactor is immutable after [New] and safe for concurrent use.
package redact
