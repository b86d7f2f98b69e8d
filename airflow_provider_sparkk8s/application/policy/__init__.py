"""The platform policy: read, checked, its secure preset, redaction."""
