"""The real kubelet on the real node (testenv/realnode), against the real API server: it
registers and reports itself, runs a plain pod whose log comes through the API server,
gives pods cluster DNS and the `kubernetes` Service, and leaves nothing behind."""

from __future__ import annotations

import ipaddress
import os
import time
from typing import Any

import pytest
from kubernetes.client import ApiClient

from testenv.controlplane import ControlPlane
from testenv.harness import kube
from testenv.harness.waiting import wait_for
from testenv.real_spark import REAL_SPARK_TIMINGS
from testenv.realnode.config import NODE_IP, POD_SUBNET
from testenv.realnode.image import SHELL_IMAGE
from testenv.realnode.node import RealNode
from testenv.runtime_image import image_name

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(300)]


def _pod(name: str, image: str, command: list[str], node: str = "real-node-0") -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "nodeName": node,
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "main",
                    "image": image,
                    "imagePullPolicy": "Never",
                    "command": command,
                    "resources": {"requests": {"cpu": "50m", "memory": "32Mi"}},
                }
            ],
        },
    }


def _phase(api: ApiClient, namespace: str, name: str) -> str:
    pod = kube.request(api, "GET", f"/api/v1/namespaces/{namespace}/pods/{name}")
    return str((pod.get("status") or {}).get("phase"))


def _log(api: ApiClient, namespace: str, name: str) -> str:
    with kube.session(api) as client:
        response = client.get(f"/api/v1/namespaces/{namespace}/pods/{name}/log")
    assert response.status_code == 200, response.text
    return str(response.text)


def test_the_real_kubelet_registers_ready_and_reports_its_node_info(
    real_plane: ControlPlane, real_admin: ApiClient, real_node: RealNode
):
    node = kube.request(real_admin, "GET", "/api/v1/nodes/real-node-0")
    status = node["status"]
    info = status["nodeInfo"]
    assert info["kubeletVersion"] == "v1.35.4"
    assert info["containerRuntimeVersion"].startswith("containerd://1.6."), info
    assert {"type": "InternalIP", "address": NODE_IP} in status["addresses"]
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "True", ready
    # The machine's own CPUs (cadvisor counts them from sysfs): nothing is faked.
    assert status["capacity"]["cpu"] == str(os.cpu_count())
    # The images the tests run were imported (the kubelet lists them as the node's).
    names = {name for image in status.get("images") or [] for name in image["names"]}
    assert f"docker.io/{image_name()}" in names, names
    REAL_SPARK_TIMINGS["real node: start -> Ready (images imported)"] = real_node.timings[
        "node Ready"
    ]


def test_a_plain_pod_runs_and_its_log_comes_through_the_api_server(
    real_plane: ControlPlane, real_namespace: str, real_admin: ApiClient
):
    ns = real_namespace
    script = 'echo "hello from $(hostname) as uid $(id -u)"; cat /etc/resolv.conf'
    started = time.monotonic()
    kube.request(
        real_admin, "POST", f"/api/v1/namespaces/{ns}/pods",
        _pod("hello", SHELL_IMAGE, ["/bin/sh", "-c", script]),
    )  # fmt: skip
    wait_for(lambda: _phase(real_admin, ns, "hello") == "Succeeded", 120, "pod hello Succeeded")
    REAL_SPARK_TIMINGS["real node: plain pod create -> Succeeded"] = time.monotonic() - started
    pod = kube.request(real_admin, "GET", f"/api/v1/namespaces/{ns}/pods/hello")
    # An address on the namespace's bridge, not loopback: the kubelet's own CNI call.
    assert ipaddress.ip_address(pod["status"]["podIP"]) in ipaddress.ip_network(POD_SUBNET)
    terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert terminated["exitCode"] == 0 and terminated["reason"] == "Completed"
    assert terminated["containerID"].startswith("containerd://")
    log = _log(real_admin, ns, "hello")
    assert "hello from hello as uid 0" in log, log
    # The kubelet's resolv.conf: the node's dnsmasq and the cluster's search path.
    assert f"nameserver {NODE_IP}" in log, log
    assert f"search {ns}.svc.cluster.local svc.cluster.local cluster.local" in log, log


# In the Spark image (Python 3.11, user 185): resolve the names through cluster DNS, then
# call the API server as the pod's service account through the `kubernetes` Service.
API_PROBE = """
import json, socket, ssl, urllib.request
for name in ("kubernetes.default.svc", "kubernetes.default", "web"):
    print("resolved", name, socket.gethostbyname(name))
sa = "/var/run/secrets/kubernetes.io/serviceaccount"
context = ssl.create_default_context(cafile=sa + "/ca.crt")
request = urllib.request.Request("https://kubernetes.default.svc/version",
    headers={"Authorization": "Bearer " + open(sa + "/token").read()})
print("version", json.load(urllib.request.urlopen(request, context=context))["gitVersion"])
"""


def test_pods_resolve_services_through_cluster_dns_and_reach_the_api_server(
    real_plane: ControlPlane, real_namespace: str, real_admin: ApiClient
):
    ns = real_namespace
    web = _pod("web", SHELL_IMAGE, ["/bin/sleep", "300"])
    web["metadata"]["labels"] = {"app": "web"}
    kube.request(real_admin, "POST", f"/api/v1/namespaces/{ns}/pods", web)
    service = {
        "metadata": {"name": "web"},
        "spec": {"clusterIP": "None", "selector": {"app": "web"}, "ports": [{"port": 80}]},
    }
    kube.request(real_admin, "POST", f"/api/v1/namespaces/{ns}/services", service)
    wait_for(lambda: _phase(real_admin, ns, "web") == "Running", 120, "pod web Running")
    web_ip = kube.request(real_admin, "GET", f"/api/v1/namespaces/{ns}/pods/web")["status"]["podIP"]

    probe = _pod("probe", f"docker.io/{image_name()}", ["/usr/bin/python3", "-c", API_PROBE])
    kube.request(real_admin, "POST", f"/api/v1/namespaces/{ns}/pods", probe)
    wait_for(
        lambda: _phase(real_admin, ns, "probe") in ("Succeeded", "Failed"), 120, "pod probe ended"
    )
    log = _log(real_admin, ns, "probe")
    assert _phase(real_admin, ns, "probe") == "Succeeded", log
    assert "resolved kubernetes.default.svc 10.96.0.1" in log, log
    assert "resolved kubernetes.default 10.96.0.1" in log, log  # through the search path
    assert f"resolved web {web_ip}" in log, log  # the watcher's record of the headless Service
    assert "version v1.35.4" in log, log  # DNAT -> forward -> API server, TLS verified


# The Spark image's Python reads bytecode, not sources, as a Spark pod's Python does with
# pyspark's zips on its path: Debian's for the standard library (its sources keep their times
# in the layer) and the zips' own (testenv/realnode/bytecode.py).
BYTECODE_PROBE = (
    'PYTHONPATH=$(ls /opt/spark/python/lib/*.zip | tr "\\n" :) exec /usr/bin/python3 -v -c '
    "\"import json, pyspark.worker; print('worker from', pyspark.worker.__file__)\""
)


def test_the_spark_images_python_imports_bytecode_not_sources(
    real_plane: ControlPlane, real_namespace: str, real_admin: ApiClient
):
    ns = real_namespace
    probe = _pod("bytecode", f"docker.io/{image_name()}", ["/bin/bash", "-c", BYTECODE_PROBE])
    kube.request(real_admin, "POST", f"/api/v1/namespaces/{ns}/pods", probe)
    wait_for(
        lambda: _phase(real_admin, ns, "bytecode") in ("Succeeded", "Failed"), 120, "probe ended"
    )
    log = _log(real_admin, ns, "bytecode")
    assert _phase(real_admin, ns, "bytecode") == "Succeeded", log[-3000:]
    assert "worker from /opt/spark/python/lib/pyspark.zip/pyspark/worker.pyc" in log, log[-3000:]
    cached = "code object from '/usr/lib/python3.11/json/__pycache__/__init__.cpython-311.pyc'"
    assert cached in log, log[-3000:]
    assert "bytecode is stale" not in log, [line for line in log.splitlines() if "stale" in line]


def test_a_stopped_node_leaves_nothing_behind_even_with_a_pod_still_running(
    real_plane: ControlPlane, real_namespace: str, real_admin: ApiClient
):
    ns = real_namespace
    second = RealNode(node_name="real-node-1", spark_versions=())
    try:
        second.start(real_plane)
        kube.request(
            real_admin, "POST", f"/api/v1/namespaces/{ns}/pods",
            _pod("sleeper", SHELL_IMAGE, ["/bin/sleep", "3600"], node="real-node-1"),
        )  # fmt: skip
        wait_for(lambda: _phase(real_admin, ns, "sleeper") == "Running", 120, "pod sleeper Running")
        assert second.leftovers(), "a running node should have something to show"
    finally:
        second.stop()  # as after a failure: the pod was never deleted
        kube.request(real_admin, "DELETE", "/api/v1/nodes/real-node-1")
    assert second.leftovers() == []
