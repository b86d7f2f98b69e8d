"""Harness shared by tests/ and benchmarks/: a recording stand-in for the API server, real
spark-submit's environment, plain-JSON requests and pods on the test control plane, plain pod
dicts, and waiting with a deadline. It imports nothing of the product (tests/test_trees.py);
the harness that drives the product is in testenv/trigger_fleet/ and beside it."""
