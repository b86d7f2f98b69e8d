"""A submission: planned, sent, its uploads; a submitted driver removed with its uploads."""
