"""A node agent that runs the pods bound to its node as local processes, so a real Spark
driver and real executors run against the test control plane.

Split the way virtual-kubelet splits a kubelet (docs/testing.md, "Process runtime"):

- kubelet bookkeeping: `kubelet.py` (node, lease, pod watch, pod workers, status sync),
  `informer.py` (list-then-watch), `log_server.py` (the kubelet's `/containerLogs`),
  `api_forward.py` (`kubernetes.default.svc:443`);
- the part that runs a container: `runtime.py` (pod directories, volumes on disk, processes
  in their own mount namespace), `cgroups.py` (memory limit, peak, OOM kills);
- pure parts, unit-tested on plain data: `env.py`, `volumes.py`, `sandbox.py`, `hosts.py`,
  `status.py`, `logs.py`, `node.py`, `quantity.py`, `images.py`.
"""
