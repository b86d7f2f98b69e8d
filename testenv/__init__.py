"""The test control plane: Go-built Kubernetes binaries (build.sh) and their
Python launcher (controlplane.py)."""
