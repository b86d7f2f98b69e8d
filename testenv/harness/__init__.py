"""Harness shared by tests/ and benchmarks/: a recording stand-in for the API server, real
spark-submit's environment, plain-JSON requests and pods on the test control plane, and
waiting with a deadline. Like the rest of testenv, it imports nothing of the product."""
