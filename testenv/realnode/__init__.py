"""A real node: containerd, runc and the real kubelet in namespaces of the test run's own."""
