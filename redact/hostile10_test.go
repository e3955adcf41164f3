package redact

import (
	"encoding/base64"
	"strings"
	"testing"
)

// Secrets of shapes the planted corpus does not hold, found by a hostile run: each must be
// gone from the redacted text.
func TestHostileSecretShapes(t *testing.T) {
	pw := "Qw9" + fake(12, alnum)
	pemTail := fake(64, b64)
	kube := base64.StdEncoding.EncodeToString([]byte("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA" + fake(60, alnum) + "\n-----END RSA PRIVATE KEY-----\n"))
	fcm := "AAAA" + fake(7, alnum) + ":APA91b" + fake(134, urlB64)
	cases := []struct{ name, text, secret string }{
		{"curl --user", "curl --user bob:" + pw + " https://x.example.com", pw},
		{"yaml block scalar password", "password: |\n  " + pw + "\nhost: db", pw},
		{"kubeconfig client-key-data (base64 PEM)", "client-key-data: " + kube, kube[:40]},
		{"PEM body after a split (tail in its own tool result)", pemTail + "\n-----END RSA PRIVATE KEY-----", pemTail},
		{"firebase cloud messaging server key", "server key " + fcm, fcm},
		{"netrc password", "machine api.example.com login bob password " + pw, pw},
		{"Dockerfile ENV with space", "ENV DB_PASSWORD " + pw, pw},
		{"SQL IDENTIFIED BY", "CREATE USER app IDENTIFIED BY '" + pw + "';", pw},
		{"ldapsearch -w", "ldapsearch -x -D cn=admin -w " + pw + " -b dc=x", pw},
	}
	r, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if out, _ := r.Redact(c.text); strings.Contains(out, c.secret) {
			t.Errorf("%s: secret left in %q", c.name, out)
		}
	}
}

// Values that are no secret must survive: a test count after "pass:" and a 40-character
// entity tag.
func TestHostileNonSecretsSurvive(t *testing.T) {
	etag := fake(40, alnum)
	for _, text := range []string{"pass: 97 tests, fail: 3", `{"etag": "` + etag + `"}`} {
		r, _ := New(nil)
		if out, n := r.Redact(text); n != 0 {
			t.Errorf("%q redacted to %q", text, out)
		}
	}
}
