package postgres

import "testing"

// TestMigrateV2AddsPins: a database of schema version 2 (no pins table, no reason requested)
// gets both from Open, its rows kept.
func TestMigrateV2AddsPins(t *testing.T) {
	u := testURL(t)
	sqldb := openTest(t, u)
	for _, stmt := range []string{
		"DROP TABLE pins",
		"ALTER TABLE compactions DROP CONSTRAINT compactions_reason_check",
		"ALTER TABLE compactions ADD CONSTRAINT compactions_reason_check CHECK (reason IN ('threshold', 'emergency', 'forced'))",
		"UPDATE schema_version SET version = 2",
		"INSERT INTO threads (id, model, encoding, created_at, updated_at) VALUES ('kept', 'gpt-4o', 'o200k_base', 1, 1)",
	} {
		if _, err := sqldb.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	again := openTest(t, u)
	if v := schemaVersion(t, again); v != Version {
		t.Fatalf("schema_version = %d after migrating, want %d", v, Version)
	}
	for _, stmt := range []string{
		"INSERT INTO pins (thread_id, seq, from_seq, to_seq, created_at) VALUES ('kept', 1, 1, 1, 1)",
		`INSERT INTO compactions (thread_id, status, reason, last_seq, token_limit, tokens_before, messages_before, created_at, updated_at)
		 VALUES ('kept', 'failed', 'requested', 0, 1000, 0, 0, 1, 1)`,
	} {
		if _, err := again.Exec(stmt); err != nil {
			t.Fatalf("after migrating: %s: %v", stmt, err)
		}
	}
}
