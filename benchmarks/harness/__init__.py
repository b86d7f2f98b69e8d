"""Harness that drives the product, shared by tests/ and benchmarks/: held Spark drivers
followed by real triggers, one fault at a time, and the snapshot stores they run. Tests may
import it; it imports nothing of tests/ (product-free helpers live in testenv/harness/)."""
