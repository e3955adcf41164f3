//go:build !nopostgres

package main

// PostgreSQL support: memctl takes postgres:// and postgresql:// URLs where it takes a file. A
// build with -tags nopostgres leaves the driver out and knows SQLite files only.
import _ "github.com/memcascade/memcascade/db/postgres"
