//go:build !nopostgres

package memory

// PostgreSQL support: Open and OpenWith take postgres:// and postgresql:// URLs. A build with
// -tags nopostgres leaves the driver out and knows SQLite files only.
import _ "github.com/memcascade/memcascade/db/postgres"
