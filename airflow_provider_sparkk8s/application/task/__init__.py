"""One task instance: its identity and labels, adoption, ownership, the kill, the resume, its
parameters as a submission."""
