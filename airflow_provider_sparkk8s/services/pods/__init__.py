"""Each pod operation once as requests, and its two senders (sync and async)."""
