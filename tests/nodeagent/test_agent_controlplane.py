"""The node agent against the real API server (the `runtime_plane` fixture): plain process
pods end to end, as a kubelet runs them. Real Spark on the agent is in tests/runtime."""

from __future__ import annotations

import base64
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import ApiClient

from testenv.controlplane import ControlPlane
from testenv.harness import kube
from testenv.harness.pods import (
    container_state,
    create,
    get_pod,
    owner_reference,
    phase,
    wait_for_pod,
    wait_for_pod_gone,
)
from testenv.nodeagent.cgroups import memory_cgroups_available
from testenv.nodeagent.images import SHELL_IMAGE
from testenv.nodeagent.node import NODE_LABEL
from tests.support.real_spark import container_pid

pytestmark = pytest.mark.controlplane
# The host's files are the shell image's files, but not its /tmp: a pod gets its own, so a
# checkout (and its venv) under /tmp is out of sight. The scripts need only the standard
# library, so they run the interpreter the venv links to.
PYTHON = os.path.realpath(sys.executable)


def shell_pod(
    name: str, script: str, *, grace: int | None = None, **container: Any
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "main",
                "image": SHELL_IMAGE,
                "command": ["/bin/sh", "-c", script],
                **container,
            }
        ],
    }
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def terminated(pod: dict[str, Any]) -> dict[str, Any]:
    return container_state(pod, "main").get("terminated") or {}


def ended(pod: dict[str, Any]) -> bool:
    return phase(pod) in ("Succeeded", "Failed")


def pod_log(api: ApiClient, namespace: str, name: str, **params: str) -> str:
    with kube.session(api) as client:
        response = client.get(f"/api/v1/namespaces/{namespace}/pods/{name}/log", params=params)
    assert response.status_code == 200, response.text
    return response.text


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def test_the_node_is_ready_and_keeps_its_lease(
    runtime_admin: ApiClient, runtime_plane: ControlPlane
):
    assert runtime_plane.agent is not None
    node = kube.request(runtime_admin, "GET", f"/api/v1/nodes/{runtime_plane.agent.node_name}")
    ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "True"
    assert node["metadata"]["labels"][NODE_LABEL] == "true"
    assert node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"] == 10250
    lease = kube.request(
        runtime_admin,
        "GET",
        f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{runtime_plane.agent.node_name}",
    )
    assert lease["spec"]["holderIdentity"] == runtime_plane.agent.node_name


def test_a_pod_runs_with_its_address_volumes_token_and_api_access(
    runtime_admin: ApiClient, runtime_namespace: str, runtime_plane: ControlPlane
):
    ns = runtime_namespace
    create(
        runtime_admin,
        ns,
        {"metadata": {"name": "conf"}, "data": {"greeting": "hello"}},
        "configmaps",
    )
    # In the pod: its address and name, a ConfigMap volume, and a call to the API server as
    # `kubernetes.default.svc` with the projected token and CA, as in-cluster clients do.
    probe = (
        "import json, ssl, urllib.request; d = '/var/run/secrets/kubernetes.io/serviceaccount/'; "
        "ctx = ssl.create_default_context(cafile=d + 'ca.crt'); "
        "req = urllib.request.Request('https://kubernetes.default.svc/api', "
        "headers={'Authorization': 'Bearer ' + open(d + 'token').read()}); "
        "print('api', urllib.request.urlopen(req, context=ctx).status, open(d + 'namespace').read())"
    )
    script = f'echo "ip=$MY_IP host=$(hostname)"; cat /conf/greeting; echo; {PYTHON} -c "{probe}"; echo oops >&2'
    pod = shell_pod(
        "plain",
        script,
        env=[{"name": "MY_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
        volumeMounts=[{"name": "conf", "mountPath": "/conf"}],
    )
    pod["spec"]["volumes"] = [{"name": "conf", "configMap": {"name": "conf"}}]
    create(runtime_admin, ns, pod)
    done = wait_for_pod(runtime_admin, ns, "plain", ended, 60, "the pod to end")
    assert phase(done) == "Succeeded", done["status"]
    assert terminated(done)["exitCode"] == 0 and terminated(done)["reason"] == "Completed"
    ip = done["status"]["podIP"]
    assert ip.startswith("127.") and ip == done["status"]["podIPs"][0]["ip"]
    assert done["status"]["hostIP"] == runtime_plane.agent.node_ip  # type: ignore[union-attr]
    assert pod_log(runtime_admin, ns, "plain").splitlines() == [
        f"ip={ip} host=plain",
        "hello",
        f"api 200 {ns}",
        "oops",
    ]


def test_logs_follow_tail_since_limit_and_timestamps(
    runtime_admin: ApiClient, runtime_namespace: str
):
    ns = runtime_namespace
    create(
        runtime_admin, ns, shell_pod("talker", "for i in 1 2 3 4; do echo line $i; sleep 0.3; done")
    )
    wait_for_pod(runtime_admin, ns, "talker", lambda p: phase(p) != "Pending", 60, "start")
    # Followed from the start, the stream ends when the container does, with every line.
    followed = pod_log(runtime_admin, ns, "talker", follow="true")
    assert followed.splitlines() == ["line 1", "line 2", "line 3", "line 4"]
    assert pod_log(runtime_admin, ns, "talker", tailLines="1") == "line 4\n"
    stamped = pod_log(runtime_admin, ns, "talker", timestamps="true", tailLines="2").splitlines()
    assert [line.split(" ", 1)[1] for line in stamped] == ["line 3", "line 4"]
    assert stamped[0].split(" ", 1)[0].endswith("Z")
    assert pod_log(runtime_admin, ns, "talker", limitBytes="9") == "line 1\nli"
    assert pod_log(runtime_admin, ns, "talker", sinceTime="2099-01-01T00:00:00Z") == ""


def test_a_failure_reports_exit_code_reason_and_the_log_tail(
    runtime_admin: ApiClient, runtime_namespace: str
):
    ns = runtime_namespace
    # One stream: lines of stdout and stderr may interleave either way, as with any runtime.
    script = "echo starting >&2; echo 'ValueError: bad input' >&2; exit 3"
    create(
        runtime_admin,
        ns,
        shell_pod("fails", script, terminationMessagePolicy="FallbackToLogsOnError"),
    )
    done = wait_for_pod(runtime_admin, ns, "fails", ended, 60, "the pod to end")
    assert phase(done) == "Failed"
    assert terminated(done)["exitCode"] == 3 and terminated(done)["reason"] == "Error"
    assert terminated(done)["message"] == "starting\nValueError: bad input"


def test_deletion_sends_sigterm_and_removes_the_pod(
    runtime_admin: ApiClient, runtime_namespace: str, tmp_path: Path
):
    ns = runtime_namespace
    script = "trap 'echo got TERM > /out/term; exit 0' TERM; echo up > /out/up; while :; do sleep 0.1; done"
    pod = shell_pod("graceful", script, volumeMounts=[{"name": "out", "mountPath": "/out"}])
    pod["spec"]["volumes"] = [{"name": "out", "hostPath": {"path": str(tmp_path)}}]
    create(runtime_admin, ns, pod)
    running = wait_for_pod(
        runtime_admin, ns, "graceful", lambda p: phase(p) == "Running", 60, "run"
    )
    pid = container_pid(running)
    deadline = time.monotonic() + 30
    while not (tmp_path / "up").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    kube.request(runtime_admin, "DELETE", f"/api/v1/namespaces/{ns}/pods/graceful")
    wait_for_pod_gone(runtime_admin, ns, "graceful", 30)
    assert (tmp_path / "term").read_text() == "got TERM\n"
    assert not alive(pid)


def test_a_container_ignoring_sigterm_is_killed_after_the_grace_period(
    runtime_admin: ApiClient, runtime_namespace: str
):
    ns = runtime_namespace
    create(
        runtime_admin,
        ns,
        shell_pod("stubborn", "trap '' TERM; while :; do sleep 0.1; done", grace=1),
    )
    running = wait_for_pod(
        runtime_admin, ns, "stubborn", lambda p: phase(p) == "Running", 60, "run"
    )
    pid = container_pid(running)
    started = time.monotonic()
    kube.request(runtime_admin, "DELETE", f"/api/v1/namespaces/{ns}/pods/stubborn")
    wait_for_pod_gone(runtime_admin, ns, "stubborn", 30)
    assert time.monotonic() - started >= 1.0
    assert not alive(pid)


def test_pods_owned_by_a_deleted_pod_are_garbage_collected(
    runtime_admin: ApiClient, runtime_namespace: str
):
    ns = runtime_namespace
    owner = create(runtime_admin, ns, shell_pod("owner", "exec sleep 600", grace=1))
    child = shell_pod("child", "exec sleep 600", grace=1)
    child["metadata"]["ownerReferences"] = [owner_reference(owner)]
    create(runtime_admin, ns, child)
    running = wait_for_pod(runtime_admin, ns, "child", lambda p: phase(p) == "Running", 60, "run")
    pid = container_pid(running)
    kube.request(runtime_admin, "DELETE", f"/api/v1/namespaces/{ns}/pods/owner")
    wait_for_pod_gone(runtime_admin, ns, "owner", 30)
    wait_for_pod_gone(runtime_admin, ns, "child", 60)
    assert not alive(pid)


def test_a_missing_secret_waits_as_create_container_config_error_until_it_exists(
    runtime_admin: ApiClient, runtime_namespace: str
):
    ns = runtime_namespace
    ref = {"valueFrom": {"secretKeyRef": {"name": "later", "key": "password"}}}
    create(runtime_admin, ns, shell_pod("waits", 'echo "pw=$PW"', env=[{"name": "PW", **ref}]))
    waiting = wait_for_pod(
        runtime_admin,
        ns,
        "waits",
        lambda p: (
            container_state(p, "main").get("waiting", {}).get("reason")
            == "CreateContainerConfigError"
        ),
        60,
        "CreateContainerConfigError",
    )
    assert container_state(waiting, "main")["waiting"]["message"] == 'secret "later" not found'
    assert phase(waiting) == "Pending"
    secret = {"metadata": {"name": "later"}, "data": {"password": base64.b64encode(b"s3").decode()}}
    create(runtime_admin, ns, secret, "secrets")
    wait_for_pod(runtime_admin, ns, "waits", ended, 60, "the pod to end")
    assert pod_log(runtime_admin, ns, "waits") == "pw=s3\n"


def test_an_unknown_image_waits_as_a_pull_failure(runtime_admin: ApiClient, runtime_namespace: str):
    ns = runtime_namespace
    pod = shell_pod("nothing", "true")
    pod["spec"]["containers"][0]["image"] = "registry.invalid/does-not-exist:1"
    create(runtime_admin, ns, pod)
    waiting = wait_for_pod(
        runtime_admin,
        ns,
        "nothing",
        lambda p: container_state(p, "main").get("waiting", {}).get("reason") == "ImagePullBackOff",
        60,
        "ImagePullBackOff",
    )
    assert (
        "registry.invalid/does-not-exist:1"
        in container_state(waiting, "main")["waiting"]["message"]
    )


@pytest.mark.skipif(not memory_cgroups_available(), reason="needs a writable v1 memory cgroup")
def test_a_container_over_its_memory_limit_is_oom_killed(
    runtime_admin: ApiClient, runtime_namespace: str
):
    ns = runtime_namespace
    hog = f"{PYTHON} -c 'b = bytearray(512 * 2**20); print(len(b))'"
    pod = shell_pod("hog", hog, resources={"limits": {"memory": "64Mi"}})
    create(runtime_admin, ns, pod)
    done = wait_for_pod(runtime_admin, ns, "hog", ended, 60, "the pod to end")
    assert phase(done) == "Failed"
    assert terminated(done)["reason"] == "OOMKilled" and terminated(done)["exitCode"] == 137


def test_pods_reach_each_other_by_service_name(runtime_admin: ApiClient, runtime_namespace: str):
    ns = runtime_namespace
    server = f"{PYTHON} -m http.server 8080 --bind $MY_IP --directory /srv"
    pod = shell_pod(
        "web",
        f"mkdir -p /srv && echo served > /srv/index.txt && exec {server}",
        env=[{"name": "MY_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
    )
    pod["metadata"]["labels"] = {"app": "web"}
    create(runtime_admin, ns, pod)
    service = {"metadata": {"name": "web"}, "spec": {"clusterIP": "None", "selector": {"app": "web"},
               "ports": [{"port": 8080}]}}  # fmt: skip
    create(runtime_admin, ns, service, "services")
    wait_for_pod(runtime_admin, ns, "web", lambda p: phase(p) == "Running", 60, "run")
    fetch = (
        f"{PYTHON} -c \"import time, urllib.request\n"
        f"for _ in range(100):\n"
        f"    try: print(urllib.request.urlopen('http://web.{ns}.svc:8080/index.txt').read().decode(), end=''); break\n"
        f"    except OSError: time.sleep(0.2)\""
    )  # fmt: skip
    create(runtime_admin, ns, shell_pod("client", fetch))
    wait_for_pod(runtime_admin, ns, "client", ended, 60, "the client to end")
    assert pod_log(runtime_admin, ns, "client") == "served\n"
    assert get_pod(runtime_admin, ns, "web") is not None
