package redact

import (
	"regexp"
	"slices"
	"strings"
)

// matchFlag reads a long command-line flag whose name says secret and its value:
// --password X, --password=X, --db-password 'X', --api-key=X, --cookie "a=b".
func matchFlag(text string, st int) []int {
	if st > 0 && !strings.ContainsRune(" \t\n\"'=", rune(text[st-1])) {
		return nil
	}
	i := st + 2
	ns := i
	for i < len(text) && (isWordByte(text[i]) || text[i] == '-') {
		i++
	}
	name := text[ns:i]
	if name == "" {
		return nil
	}
	// The flag's last keyword: the longest keyword that ends the name.
	w := ""
	for _, k := range keyWords {
		if len(k) > len(w) && len(name) >= len(k) && equalFoldASCII(name[len(name)-len(k):], k) {
			ws := len(name) - len(k)
			if ws > 0 && name[ws-1] != '-' && name[ws-1] != '_' && shortKeyWords[k] {
				continue
			}
			w = k
		}
	}
	if w == "" || !keyOK(name, len(name)-len(w), w, name) {
		return nil
	}
	eq := false
	switch {
	case i < len(text) && text[i] == '=':
		i++
		eq = true
	case i < len(text) && (text[i] == ' ' || text[i] == '\t'):
		for i < len(text) && (text[i] == ' ' || text[i] == '\t') {
			i++
		}
	default:
		return nil
	}
	if i >= len(text) {
		return nil
	}
	var s, e int
	quoted := false
	switch c := text[i]; c {
	case '"', '\'':
		s, e, quoted = i+1, endQuoted(text, i+1, c), true
	default:
		if c == '-' && !eq {
			return nil // the next flag
		}
		s = i
		e = s
		for e < len(text) && !strings.ContainsRune(" \t\n\r\"'`;&|<>", rune(text[e])) {
			if text[e] == '\\' && e+1 < len(text) && strings.IndexByte("nrt\"'", text[e+1]) >= 0 {
				break
			}
			e++
		}
	}
	if e <= s {
		return nil
	}
	v := text[s:e]
	if placeholder(v) || notSecretWords[strings.ToLower(v)] {
		return nil
	}
	kind := keyKindOf(w, name)
	if !quoted && identifierLike(v) {
		return nil
	}
	if kind == KindToken && !tokenLike(v) {
		return nil // --token flag
	}
	if (kind == KindSession || kind == KindSignature) && !tokenLike(v) {
		return nil
	}
	return []int{st, e, s, e, kindIndex(kind), 0}
}

// programBefore reports whether one of progs is a word of the line before i (within 400
// bytes), in the same command of a pipeline or list: the command a flag belongs to.
func programBefore(text string, i int, progs ...string) bool {
	ls := max(0, i-400)
	if nl := strings.LastIndexByte(text[ls:i], '\n'); nl >= 0 {
		ls += nl + 1
	}
	line := text[ls:i]
	if k := strings.LastIndexAny(line, ";|&"); k >= 0 {
		line = line[k+1:] // the last command of a pipeline or list
	}
	for _, p := range progs {
		for off := 0; ; {
			j := strings.Index(line[off:], p)
			if j < 0 {
				break
			}
			j += off
			if (j == 0 || !isWordByte(line[j-1])) && (j+len(p) == len(line) || !isWordByte(line[j+len(p)])) {
				return true
			}
			off = j + 1
		}
	}
	return false
}

// cliCred is a flag that gives a command a password, or credentials, on its command line.
type cliCred struct {
	flag     string   // "-p", "--user", ...
	progs    []string // the commands the flag belongs to (a word of the line before it)
	attached bool     // the value may be glued to the flag: -pPW
	spaced   bool     // the value may follow after spaces: -p PW
	split    byte     // the value is user<split>password: only the password is a secret
	kind     string
}

var (
	httpProgs  = []string{"curl", "wget", "http", "https", "xh", "xhs", "curlie", "grpcurl", "ab", "siege", "aria2c"}
	sambaProgs = []string{"smbclient", "rpcclient", "smbget", "smbcacls", "smbmap", "smbcquotas", "net", "winexe", "crackmapexec", "nxc", "netexec"}
	ldapProgs  = []string{"ldapsearch", "ldapmodify", "ldapadd", "ldapdelete", "ldappasswd", "ldapwhoami", "ldapcompare", "ldapmodrdn", "ldapexop", "ldapurl"}
	mysqlProgs = []string{"mysql", "mariadb", "mysqldump", "mysqladmin", "mysqlimport", "mysqlsh", "mysqlcheck", "mysqlpump", "mariadb-dump"}
	mongoProgs = []string{"mongo", "mongosh", "mongodump", "mongorestore", "mongoexport", "mongoimport", "mongostat", "mongotop", "mongofiles"}
)

// cliCreds are the credential flags of common commands. A flag is tried only when one of
// its commands is a word of the line before it, so "-p 8080:80" of docker run or "grep -p"
// stay.
var cliCreds = []cliCred{
	{flag: "-p", progs: mysqlProgs, attached: true, kind: KindPassword},
	{flag: "-p", progs: append([]string{"sshpass", "login"}, mongoProgs...), spaced: true, kind: KindPassword},
	{flag: "-p", progs: []string{"7z", "7za", "7zz", "7zr", "rar", "unrar", "winrar"}, attached: true, kind: KindPassword},
	{flag: "-P", progs: []string{"zip", "unzip", "zipcloak", "sqlcmd", "bcp", "osql", "isql", "tsql"}, spaced: true, kind: KindPassword},
	{flag: "-a", progs: []string{"redis-cli", "valkey-cli", "keydb-cli"}, spaced: true, kind: KindPassword},
	{flag: "-w", progs: ldapProgs, attached: true, spaced: true, kind: KindPassword},
	{flag: "-k", progs: []string{"openssl"}, spaced: true, kind: KindPassword},
	{flag: "-u", progs: httpProgs, attached: true, spaced: true, split: ':', kind: KindBasicAuth},
	{flag: "-U", progs: httpProgs, attached: true, spaced: true, split: ':', kind: KindBasicAuth},
	{flag: "--user", progs: httpProgs, spaced: true, split: ':', kind: KindBasicAuth},
	{flag: "--proxy-user", progs: httpProgs, spaced: true, split: ':', kind: KindBasicAuth},
	{flag: "-u", progs: []string{"lftp"}, spaced: true, split: ',', kind: KindBasicAuth},
	{flag: "-U", progs: sambaProgs, attached: true, spaced: true, split: '%', kind: KindPassword},
	{flag: "--user", progs: sambaProgs, spaced: true, split: '%', kind: KindPassword},
}

// cliCredAnchors are the distinct flags of cliCreds.
func cliCredAnchors() []string {
	var out []string
	for _, c := range cliCreds {
		if !slices.Contains(out, c.flag) {
			out = append(out, c.flag)
		}
	}
	return out
}

// matchShortFlag reads the secret given to a credential flag of cliCreds: mysql -pPW,
// sshpass -p PW, redis-cli -a PW, ldapsearch -w PW, openssl enc -k PW, zip -P PW,
// curl -u user:PW, curl --user user:PW, smbclient -U user%PW.
func matchShortFlag(text string, st int) []int {
	if st > 0 && !strings.ContainsRune(" \t\"'", rune(text[st-1])) {
		return nil
	}
	for _, c := range cliCreds {
		if !strings.HasPrefix(text[st:], c.flag) {
			continue
		}
		i := st + len(c.flag)
		if i >= len(text) {
			return nil
		}
		long := strings.HasPrefix(c.flag, "--")
		glued := text[i] != ' ' && text[i] != '\t'
		switch {
		case long && text[i] == '=':
			i++
		case glued && (long || !c.attached):
			continue
		case !glued && !c.spaced:
			continue
		}
		if !programBefore(text, st, c.progs...) {
			continue
		}
		for i < len(text) && (text[i] == ' ' || text[i] == '\t') {
			i++
		}
		if i >= len(text) {
			return nil
		}
		s, e := i, i
		if q := text[i]; q == '"' || q == '\'' {
			s = i + 1
			e = endQuoted(text, s, q)
		} else {
			for e < len(text) && !strings.ContainsRune(" \t\n\r\"'`;&|<>", rune(text[e])) {
				e++
			}
		}
		if e <= s || text[s] == '-' {
			return nil
		}
		if c.split != 0 {
			k := strings.IndexByte(text[s:e], c.split)
			if k < 0 || s+k+1 >= e {
				return nil // curl -u user: asks for the password
			}
			s += k + 1
		}
		if placeholder(text[s:e]) {
			return nil
		}
		return []int{st, e, s, e, kindIndex(c.kind), 0}
	}
	return nil
}

// matchNetUse reads the password of Windows' net use \\srv\share PW /user:name (in any
// order) and net user name PW: the arguments that are neither a switch, a share, a drive
// nor "*" (which asks for it).
func matchNetUse(text string, st int) []int {
	if st > 0 && isWordByte(text[st-1]) {
		return nil
	}
	user := len(text) >= st+9 && equalFoldASCII(text[st:st+9], "net user ")
	i := st + len("net use ")
	if user {
		i++
	}
	end := i
	for end < len(text) && text[end] != '\n' && text[end] != '\r' && text[end] != '&' && text[end] != '|' && end-i < 400 {
		end++
	}
	line := text[i:end]
	args, share := 0, false
	for j := i; j < end; {
		for j < end && (text[j] == ' ' || text[j] == '\t') {
			j++
		}
		s := j
		for j < end && text[j] != ' ' && text[j] != '\t' {
			j++
		}
		if s == j {
			break
		}
		a := strings.Trim(text[s:j], `"'`)
		switch {
		case a == "" || a[0] == '/' || a == "*":
			continue
		case a[0] == '\\' || len(a) == 2 && a[1] == ':':
			share = true // a share or a drive letter
			continue
		}
		args++
		if user && args == 1 {
			continue // the user name
		}
		// net use needs the share before its password; net user a switch (/add) or a
		// value that is no plain word.
		if placeholder(a) || !user && !share || user && !strings.Contains(line, " /") && !secretish(a) {
			return nil
		}
		if text[s] == '"' || text[s] == '\'' {
			s, j = s+1, j-1
		}
		return []int{st, j, s, j, kindIndex(KindPassword), 0}
	}
	return nil
}

// matchHtpasswd reads the password of htpasswd -b[flags] file user PW and
// htpasswd -nb user PW.
func matchHtpasswd(text string, st int) []int {
	if st > 0 && (isWordByte(text[st-1]) || text[st-1] == '.' || text[st-1] == '-') {
		return nil
	}
	i := st + len("htpasswd")
	batch, stdout := false, false
	var pos [][2]int
	for i < len(text) && text[i] != '\n' && text[i] != '|' && text[i] != ';' && text[i] != '&' {
		for i < len(text) && (text[i] == ' ' || text[i] == '\t') {
			i++
		}
		s := i
		for i < len(text) && !strings.ContainsRune(" \t\n|;&", rune(text[i])) {
			i++
		}
		if s == i {
			break
		}
		if text[s] == '-' {
			batch = batch || strings.ContainsRune(text[s+1:i], 'b')
			stdout = stdout || strings.ContainsRune(text[s+1:i], 'n')
			continue
		}
		pos = append(pos, [2]int{s, i})
	}
	want := 2
	if stdout {
		want = 1
	}
	if !batch || len(pos) <= want {
		return nil
	}
	s, e := pos[want][0], pos[want][1]
	if q := text[s]; (q == '"' || q == '\'') && e-s >= 2 && text[e-1] == q {
		s, e = s+1, e-1
	}
	if e <= s || placeholder(text[s:e]) {
		return nil
	}
	return []int{st, e, s, e, kindIndex(KindPassword), 0}
}

// goDSN matches user:password@tcp(host:port)/db, the DSN form of Go's MySQL driver.
var goDSN = regexp.MustCompile(`^([^\s"'=:@/]*:[^\s"']+)@(?:tcp|unix|udp|tcp6)\(`)

func matchGoDSN(text string, st int) []int {
	lim := min(len(text), st+400)
	m := goDSN.FindStringSubmatchIndex(text[st:lim])
	if m == nil {
		return nil
	}
	pw := text[st+m[2] : st+m[3]]
	if placeholder(pw[strings.IndexByte(pw, ':')+1:]) {
		return nil
	}
	return []int{st, st + m[1], st + m[2], st + m[3], kindIndex(KindConnectionString), 0}
}

// tokenStartBefore finds where the token holding the anchor at pos starts.
func tokenStartBefore(text string, pos int) int {
	st := pos
	for st > 0 && pos-st < 300 {
		c := text[st-1]
		if c == ' ' || c == '\t' || c == '\n' || c == '"' || c == '\'' || c == '=' || c == '`' || c == '(' || c == ',' || c == '>' {
			break
		}
		st--
	}
	return st
}

// openSSLPass matches -passin pass:X and -passout pass:X.
var openSSLPass = `-pass(?:in|out)?[ \t]+pass:([^\s"']+)`

// bareAWSSecret finds 40-character base64 strings with no secret label, shaped like an AWS
// secret access key: bounded by non-base64 bytes, with at least eight upper-case and
// eight lower-case letters and a digit (a random 40-character key fails this about 3
// times in 1000), and not hexadecimal (commit hashes).
//
// Every run of 40 or more base64 bytes holds a multiple of 40, so only the bytes at
// multiples of 40 are probed, and the run is measured around a probe that hits.
func bareAWSSecret(text string) [][]int {
	var out [][]int
	n := len(text)
	for p := 0; p < n; p += 40 {
		if !isB64(text[p]) {
			continue
		}
		i, j := p, p+1
		for i > 0 && isB64(text[i-1]) {
			i--
		}
		for j < n && isB64(text[j]) {
			j++
		}
		if i > 0 && text[i-1] == '\\' && (text[i] == 'n' || text[i] == 'r' || text[i] == 't') {
			i++ // after an escaped line break in JSON text
		}
		if j-i == 40 && (i == 0 || !isB64Edge(text[i-1])) && (j == n || !isB64Edge(text[j])) && awsShaped(text[i:j]) && !idLabelled(text, i) {
			if len(out) == 0 || out[len(out)-1][0] != i {
				out = append(out, []int{i, j})
			}
		}
		p = j - j%40 // the next probe is the first past this run
	}
	return out
}

var b64Table = func() (t [256]bool) {
	for b := 0; b < 256; b++ {
		t[b] = b >= 'A' && b <= 'Z' || b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '+' || b == '/'
	}
	return t
}()

func isB64(b byte) bool { return b64Table[b] }

// isB64Edge reports bytes that continue a token: a 40-byte run next to them is part of
// something longer.
func isB64Edge(b byte) bool {
	return b == '=' || b == '_' || b == '-' || b == '.' || b == '%'
}

func awsShaped(v string) bool {
	c := classify(v)
	if c.upper < 8 || c.lower < 8 || c.digit < 1 {
		return false
	}
	if strings.Count(v, "/") > 3 {
		return false // a path
	}
	return true
}

// idLabels are the last words of keys whose values are ids, digests and versions, never
// secrets: a 40-byte value under one of them is not taken for an AWS secret key.
var idLabels = set("etag", "sha", "sha1", "sha256", "sha512", "hash", "digest", "checksum", "commit",
	"id", "uid", "uuid", "guid", "oid", "rev", "revision", "version", "md5", "fingerprint", "ref",
	"tag", "crc", "integrity", "hex", "sum", "nonce", "cursor")

// idLabelled reports a value at i whose key (key=, key:, "key": ") names an id or digest.
func idLabelled(text string, i int) bool {
	j := i
	for j > 0 && i-j < 8 && strings.IndexByte(" \t\"'\\", text[j-1]) >= 0 {
		j--
	}
	if j == 0 || (text[j-1] != ':' && text[j-1] != '=') {
		return false
	}
	j--
	for j > 0 && i-j < 12 && strings.IndexByte(" \t\"'\\", text[j-1]) >= 0 {
		j--
	}
	ke := j
	for j > 0 && ke-j < 64 && (isWordByte(text[j-1]) || text[j-1] == '-' || text[j-1] == '.') {
		j--
	}
	words := keyWordsOf(text[j:ke])
	return len(words) > 0 && idLabels[words[len(words)-1]]
}
