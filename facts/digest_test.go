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
