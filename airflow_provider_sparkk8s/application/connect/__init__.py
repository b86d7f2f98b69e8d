"""Spark Connect servers: their conf, pod, URLs, readiness and status."""
