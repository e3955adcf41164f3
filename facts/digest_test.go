package facts

import (
	"slices"
	"testing"
)

// TestDigestFacts: digests and hashes an agent acts on are facts of kind digest, whole (a
// sha256: digest, npm's sha512-, go.sum's h1:, md5, sha256 and sha512 hex strings, an address
// after 0x); a 40-digit commit id stays an id, and a shorter hex run or a word is no digest.
func TestDigestFacts(t *testing.T) {
	digests := []string{
		"sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		"sha512-Q1JqjqnWHKhBz3zd3ZArCqqeZbVN7u1GRqSRxrm3IaW8yEHnRHmjcq2gEvl5s6RWeWUCrfYxvNQ0yA2hwqcXbg==",
		"h1:4Xq3Zr8Tb6Wm2Lp9Nv5Ks1Yd7Fh0Jc3Ge8Ua2Ib6Oc=",
		"d41d8cd98f00b204e9800998ecf8427e",
		"E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855",
		"0x5a0b54d5dc17e0aadc383d2db43b0a0d3e029c4c",
	}
	for _, d := range digests {
		fs := Extract([]Message{{Role: "tool", Content: "pulled " + d + ", verified."}})
		if !slices.ContainsFunc(fs, func(f Fact) bool { return f.Kind == KindDigest && f.Text == d }) {
			t.Errorf("%q: no digest fact in %+v", d, fs)
		}
	}
	for _, text := range []string{"commit a94a8fe5ccb19ba61c4c0873d391e987982fbbd3 merged", "deadbeef12 is short", "the sha256 sum is printed"} {
		for _, f := range Extract([]Message{{Role: "tool", Content: text}}) {
			if f.Kind == KindDigest {
				t.Errorf("%q: digest fact %q", text, f.Text)
			}
		}
	}
}

// TestVersionFacts: a version the user names or a tool call is given is a fact of kind
// version; an IP address, a date and a version only a tool printed are not.
func TestVersionFacts(t *testing.T) {
	for _, v := range []string{"2.31.0", "v1.26.8", "1.4.0-rc.2", "v0.0.0-20240515143000-a94a8fe5ccb1", "1.0.0+build.5"} {
		fs := Extract([]Message{{Role: "user", Content: "Pin the release to " + v + ", please."}})
		if !slices.ContainsFunc(fs, func(f Fact) bool { return f.Kind == KindVersion && f.Text == v }) {
			t.Errorf("%q: no version fact in %+v", v, fs)
		}
		fs = Extract([]Message{{Role: "assistant", ToolCalls: []ToolCall{{Name: "install", Arguments: `{"version":"` + v + `"}`, ID: "c1"}}}})
		if !slices.ContainsFunc(fs, func(f Fact) bool { return f.Kind == KindVersion && f.Text == v }) {
			t.Errorf("%q in arguments: no version fact in %+v", v, fs)
		}
	}
	for _, m := range []Message{{Role: "user", Content: "ping 10.0.0.1 then 192.168.1.20"}, {Role: "user", Content: "on 15.05.2024"},
		{Role: "tool", Content: "Successfully installed requests-2.31.0 urllib3 2.2.1"}} {
		for _, f := range Extract([]Message{m}) {
			if f.Kind == KindVersion {
				t.Errorf("%q: version fact %q", m.Content, f.Text)
			}
		}
	}
}
