-- Schema version 4: an attempt row says whether its token counts were counted locally (the
-- server sent no usage) rather than reported by the server. Keep this file ASCII-only.

ALTER TABLE cascade_attempts ADD COLUMN usage_estimated INTEGER NOT NULL DEFAULT 0;
