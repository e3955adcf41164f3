package config_test

import (
	"testing"

	_ "github.com/memcascade/memcascade/db/postgres" // postgres:// URLs, for the PostgreSQL run
	"github.com/memcascade/memcascade/internal/testdb"
)

// TestMain runs every test of the package on SQLite, then on PostgreSQL when
// MEMCASCADE_TEST_POSTGRES is set (see testdb.Main): the compactions of the hook tests store
// their rows.
func TestMain(m *testing.M) { testdb.Main(m) }
