// Package english writes counts for people: "1 pass", "2 passes", "0 chunks".
package english

import "strconv"

// Count is n followed by one (n is 1 or -1) or many (any other n).
func Count(n int, one, many string) string {
	if n == 1 || n == -1 {
		return strconv.Itoa(n) + " " + one
	}
	return strconv.Itoa(n) + " " + many
}
