"""Spark Connect servers: launched, read, torn down; the program of their idle watcher."""
