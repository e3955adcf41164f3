package memory

// Effective exposes the settings a compaction of a thread uses, for the precedence test.
func (c *Compactor) Effective(thread, over ThreadSettings) Settings { return c.effective(thread, over) }
