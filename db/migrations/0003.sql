-- Placeholder for schema version 3, which another change defines; this file keeps the
-- migrations in sequence until that one lands and replaces it. Keep this file ASCII-only.

SELECT 1;
