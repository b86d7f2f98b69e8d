"""The test environment: the control plane (Go-built Kubernetes binaries, build.sh, and
their launcher, controlplane.py), the servers and the real node the tests start, and the
harness tests/ and benchmarks/ share. It imports neither of them (tests/test_trees.py)."""
