"""Smoke tests of the test control plane itself (issue 2): the real API server,
controllers, scheduler and KWOK behave as the other tests assume."""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import pytest
from kubernetes import config as k8s_config
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from testenv.controlplane import STATIC_TOKEN_USER, ControlPlane
from testenv.harness import kube
from testenv.harness.pods import (
    EXIT_CODE,
    HOLD,
    MANUAL,
    MESSAGE,
    REASON,
    RUN_MS,
    UNPULLABLE_IMAGE,
    condition,
    container_state,
    create,
    get_pod,
    owner_reference,
    phase,
    pod_manifest,
    running_status,
    set_pod_status,
    terminated_status,
    wait_for_pod,
    wait_for_pod_gone,
)
from testenv.harness.waiting import wait_for

pytestmark = pytest.mark.controlplane

SPARK_CONTAINER = "spark-kubernetes-driver"
POD_VERBS = ["create", "get", "list", "watch", "delete"]


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _pods_path(namespace: str) -> str:
    return f"/api/v1/namespaces/{namespace}/pods"


@contextmanager
def _client_for(
    plane: ControlPlane, namespace: str, tmp_path: Path, token: str | None
) -> Iterator[ApiClient]:
    """An ApiClient built from a kubeconfig file, as a user of the provider would."""
    path = plane.write_kubeconfig(tmp_path / "identity.kubeconfig", namespace, token=token)
    api = k8s_config.new_client_from_config(config_file=str(path))
    try:
        yield api
    finally:
        api.close()


def _grant_pod_access(admin: ApiClient, namespace: str, subject: dict[str, Any]) -> None:
    rbac = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}"
    kube.request(
        admin,
        "POST",
        f"{rbac}/roles",
        {
            "metadata": {"name": "pods"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": POD_VERBS}],
        },
    )
    kube.request(
        admin,
        "POST",
        f"{rbac}/rolebindings",
        {
            "metadata": {"name": "pods"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pods"},
            "subjects": [subject],
        },
    )


def _create_service_account(admin: ApiClient, namespace: str, name: str) -> None:
    kube.request(
        admin,
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts",
        {"metadata": {"name": name}},
    )


def _username(api: ApiClient) -> str:
    review = kube.request(
        api,
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
    )
    return str(review["status"]["userInfo"]["username"])


Identity = Callable[[ControlPlane, str, ApiClient], tuple[str | None, str]]


def _admin_identity(plane: ControlPlane, namespace: str, admin: ApiClient) -> tuple[None, str]:
    return None, "admin"


def _static_token_identity(
    plane: ControlPlane, namespace: str, admin: ApiClient
) -> tuple[str, str]:
    subject = {"kind": "User", "name": STATIC_TOKEN_USER, "apiGroup": "rbac.authorization.k8s.io"}
    _grant_pod_access(admin, namespace, subject)
    return plane.static_token, STATIC_TOKEN_USER


def _service_account_identity(
    plane: ControlPlane, namespace: str, admin: ApiClient
) -> tuple[str, str]:
    _create_service_account(admin, namespace, "spark")
    subject = {"kind": "ServiceAccount", "name": "spark", "namespace": namespace}
    _grant_pod_access(admin, namespace, subject)
    return plane.request_token(namespace, "spark"), f"system:serviceaccount:{namespace}:spark"


def test_version_reports_the_pinned_release(kube_admin: ApiClient) -> None:
    version = kube.request(kube_admin, "GET", "/version")
    assert (version["gitVersion"], version["major"], version["minor"]) == ("v1.35.4", "1", "35")


@pytest.mark.parametrize(
    "identity",
    [_admin_identity, _static_token_identity, _service_account_identity],
    ids=["admin-cert", "static-token", "service-account-token"],
)
def test_each_identity_creates_gets_lists_and_watches_pods(
    identity: Identity,
    control_plane: ControlPlane,
    namespace: str,
    kube_admin: ApiClient,
    tmp_path: Path,
) -> None:
    token, expected_user = identity(control_plane, namespace, kube_admin)
    with _client_for(control_plane, namespace, tmp_path, token) as api:
        assert _username(api) == expected_user
        pods = _pods_path(namespace)
        start_version = kube.request(api, "GET", pods)["metadata"]["resourceVersion"]

        kube.request(api, "POST", pods, pod_manifest("probe", annotations={HOLD: "true"}))

        assert kube.request(api, "GET", f"{pods}/probe")["metadata"]["name"] == "probe"
        listed = kube.request(api, "GET", pods)["items"]
        assert [pod["metadata"]["name"] for pod in listed] == ["probe"]
        with closing(kube.watch(api, pods, start_version, timeout_seconds=20)) as events:
            first_event = next(events)
        assert (first_event["type"], first_event["object"]["metadata"]["name"]) == (
            "ADDED",
            "probe",
        )


@pytest.mark.parametrize("who", ["static-token", "service-account-token"])
def test_identity_without_permissions_is_forbidden(
    who: str,
    control_plane: ControlPlane,
    namespace: str,
    kube_admin: ApiClient,
    tmp_path: Path,
) -> None:
    if who == "static-token":
        token = control_plane.static_token
    else:
        _create_service_account(kube_admin, namespace, "nobody")
        token = control_plane.request_token(namespace, "nobody")
    pods = _pods_path(namespace)
    with _client_for(control_plane, namespace, tmp_path, token) as api:
        with pytest.raises(ApiException) as listing:
            kube.request(api, "GET", pods)
        with pytest.raises(ApiException) as creating:
            kube.request(api, "POST", pods, pod_manifest("denied"))
    assert (listing.value.status, creating.value.status) == (403, 403)
    assert get_pod(kube_admin, namespace, "denied") is None


def test_pod_is_scheduled_on_a_kwok_node_runs_and_succeeds(
    control_plane: ControlPlane, namespace: str, kube_admin: ApiClient
) -> None:
    pods = _pods_path(namespace)
    start_version = kube.request(kube_admin, "GET", pods)["metadata"]["resourceVersion"]
    create(kube_admin, namespace, pod_manifest("driver", annotations={RUN_MS: "700"}))

    phases: list[str] = []
    for event in kube.watch(kube_admin, pods, start_version, timeout_seconds=30):
        current = event["object"].get("status", {}).get("phase")
        if current and (not phases or phases[-1] != current):
            phases.append(current)
        if current in ("Succeeded", "Failed"):
            break
    assert phases == ["Pending", "Running", "Succeeded"]

    pod = get_pod(kube_admin, namespace, "driver")
    assert pod is not None
    assert pod["spec"]["nodeName"] in control_plane.node_names
    assert (condition(pod, "PodScheduled") or {}).get("status") == "True"
    assert pod["status"]["podIP"].startswith("10.244.")
    terminated = container_state(pod, SPARK_CONTAINER)["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")
    assert "message" not in terminated
    assert terminated["startedAt"] <= terminated["finishedAt"]


def test_running_pod_is_ready_with_running_containers(
    namespace: str, kube_admin: ApiClient
) -> None:
    create(kube_admin, namespace, pod_manifest("driver", annotations={HOLD: "true"}))
    pod = wait_for_pod(kube_admin, namespace, "driver", lambda p: phase(p) == "Running")
    assert (condition(pod, "Ready") or {}).get("status") == "True"
    assert (condition(pod, "ContainersReady") or {}).get("status") == "True"
    assert "startedAt" in container_state(pod, SPARK_CONTAINER)["running"]


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        (
            {EXIT_CODE: "137", REASON: "OOMKilled", MESSAGE: "container exceeded its memory"},
            (137, "OOMKilled", "container exceeded its memory"),
        ),
        ({EXIT_CODE: "1"}, (1, "Error", None)),
    ],
    ids=["oom-with-message", "default-reason"],
)
def test_failing_pod_reports_exit_code_reason_and_message(
    annotations: dict[str, str],
    expected: tuple[int, str, str | None],
    namespace: str,
    kube_admin: ApiClient,
) -> None:
    manifest = pod_manifest(
        "driver",
        annotations={RUN_MS: "300", **annotations},
        container_names=("sidecar", SPARK_CONTAINER),
    )
    create(kube_admin, namespace, manifest)
    pod = wait_for_pod(
        kube_admin, namespace, "driver", lambda p: phase(p) in ("Succeeded", "Failed")
    )
    assert phase(pod) == "Failed"
    terminated = container_state(pod, SPARK_CONTAINER)["terminated"]
    assert (terminated["exitCode"], terminated["reason"], terminated.get("message")) == expected
    sidecar = container_state(pod, "sidecar")["terminated"]
    assert (sidecar["exitCode"], sidecar["reason"]) == (0, "Completed")


def test_reason_and_message_annotations_also_apply_to_success(
    namespace: str, kube_admin: ApiClient
) -> None:
    annotations = {RUN_MS: "100", REASON: "Finished", MESSAGE: "all good"}
    create(kube_admin, namespace, pod_manifest("driver", annotations=annotations))
    pod = wait_for_pod(kube_admin, namespace, "driver", lambda p: phase(p) == "Succeeded")
    terminated = container_state(pod, SPARK_CONTAINER)["terminated"]
    assert (terminated["exitCode"], terminated["reason"], terminated["message"]) == (
        0,
        "Finished",
        "all good",
    )


def test_held_pod_keeps_running_until_the_annotation_changes(
    namespace: str, kube_admin: ApiClient
) -> None:
    create(kube_admin, namespace, pod_manifest("held", annotations={HOLD: "true", RUN_MS: "100"}))
    wait_for_pod(kube_admin, namespace, "held", lambda p: phase(p) == "Running")
    # A companion created after the held pod was Running, with a longer run time:
    # once it has finished, the held pod has outlived its own run-ms (no fixed sleep).
    create(kube_admin, namespace, pod_manifest("clock", annotations={RUN_MS: "600"}))
    wait_for_pod(kube_admin, namespace, "clock", lambda p: phase(p) == "Succeeded")
    assert phase(get_pod(kube_admin, namespace, "held") or {}) == "Running"

    kube.request(
        kube_admin,
        "PATCH",
        f"{_pods_path(namespace)}/held",
        {"metadata": {"annotations": {HOLD: "false"}}},
        content_type="application/merge-patch+json",
    )
    pod = wait_for_pod(kube_admin, namespace, "held", lambda p: phase(p) == "Succeeded")
    assert container_state(pod, SPARK_CONTAINER)["terminated"]["exitCode"] == 0


def test_unpullable_image_waits_in_image_pull_backoff(
    namespace: str, kube_admin: ApiClient
) -> None:
    create(kube_admin, namespace, pod_manifest("driver", image=UNPULLABLE_IMAGE))

    def backing_off(pod: dict[str, Any]) -> bool:
        waiting = container_state(pod, SPARK_CONTAINER).get("waiting", {})
        return bool(waiting.get("reason") == "ImagePullBackOff")

    pod = wait_for_pod(kube_admin, namespace, "driver", backing_off)
    assert phase(pod) == "Pending"
    assert UNPULLABLE_IMAGE in container_state(pod, SPARK_CONTAINER)["waiting"]["message"]
    assert (condition(pod, "Ready") or {}).get("status") == "False"


def test_pod_whose_node_selector_matches_no_node_is_unschedulable(
    namespace: str, kube_admin: ApiClient
) -> None:
    manifest = pod_manifest("driver", node_selector={"sparkk8s.io/no-such-label": "anywhere"})
    create(kube_admin, namespace, manifest)
    pod = wait_for_pod(
        kube_admin,
        namespace,
        "driver",
        lambda p: (condition(p, "PodScheduled") or {}).get("reason") == "Unschedulable",
    )
    scheduled = condition(pod, "PodScheduled") or {}
    assert scheduled["status"] == "False"
    assert "node affinity/selector" in scheduled["message"]
    assert phase(pod) == "Pending"
    assert "nodeName" not in pod["spec"]


def test_deleting_an_owner_garbage_collects_what_it_owns(
    namespace: str, kube_admin: ApiClient
) -> None:
    driver = create(kube_admin, namespace, pod_manifest("driver", annotations={HOLD: "true"}))
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "driver-conf", "ownerReferences": [owner_reference(driver)]},
        "data": {"spark.properties": "spark.app.name=x\n"},
    }
    create(kube_admin, namespace, config_map, plural="configmaps")
    executor = pod_manifest("exec-1", annotations={HOLD: "true"}, owner=driver)
    create(kube_admin, namespace, executor)
    wait_for_pod(kube_admin, namespace, "exec-1", lambda p: phase(p) == "Running")

    kube.request(kube_admin, "DELETE", f"{_pods_path(namespace)}/driver")

    wait_for_pod_gone(kube_admin, namespace, "driver")
    wait_for_pod_gone(kube_admin, namespace, "exec-1")
    config_maps = f"/api/v1/namespaces/{namespace}/configmaps"
    wait_for(
        lambda: (
            "driver-conf"
            not in [
                item["metadata"]["name"]
                for item in kube.request(kube_admin, "GET", config_maps)["items"]
            ]
        ),
        30,
        "the owned ConfigMap to be garbage-collected",
    )


def test_manual_pod_status_is_left_to_the_test(namespace: str, kube_admin: ApiClient) -> None:
    create(kube_admin, namespace, pod_manifest("driver", annotations={MANUAL: "true"}))
    wait_for_pod(
        kube_admin,
        namespace,
        "driver",
        lambda p: (condition(p, "PodScheduled") or {}).get("status") == "True",
    )
    set_pod_status(kube_admin, namespace, "driver", running_status((SPARK_CONTAINER,), _now()))
    # An ordinary pod created afterwards runs to completion: proof that KWOK had
    # time to act on the manual pod and left it alone.
    create(kube_admin, namespace, pod_manifest("clock", annotations={RUN_MS: "100"}))
    wait_for_pod(kube_admin, namespace, "clock", lambda p: phase(p) == "Succeeded")
    pod = get_pod(kube_admin, namespace, "driver") or {}
    assert phase(pod) == "Running"
    assert "podIP" not in pod["status"]

    failed = terminated_status((SPARK_CONTAINER,), 3, "Error", _now(), message="boom")
    set_pod_status(kube_admin, namespace, "driver", failed)
    pod = get_pod(kube_admin, namespace, "driver") or {}
    terminated = container_state(pod, SPARK_CONTAINER)["terminated"]
    assert (phase(pod), terminated["exitCode"], terminated["message"]) == ("Failed", 3, "boom")
    # Conditions merge by type, as with a kubelet's patch: the scheduler's stays.
    assert (condition(pod, "PodScheduled") or {}).get("status") == "True"


def test_restart_apiserver_keeps_port_and_data(
    control_plane: ControlPlane, namespace: str, kube_admin: ApiClient
) -> None:
    create(kube_admin, namespace, pod_manifest("before", annotations={HOLD: "true"}))
    server = control_plane.server
    old_pid = control_plane.pids()["kube-apiserver"]

    # Twice in a row: the controllers' informers used to back off for up to a minute after
    # the second restart, and a new namespace waited that long for its service account.
    control_plane.restart_apiserver()
    control_plane.restart_apiserver()

    assert control_plane.server == server
    assert control_plane.pids()["kube-apiserver"] not in (None, old_pid)
    assert get_pod(kube_admin, namespace, "before") is not None
    # The restart returns a settled plane: a new namespace is served at once, as at start-up.
    fresh = f"{namespace}-after"
    kube.request(kube_admin, "POST", "/api/v1/namespaces", {"metadata": {"name": fresh}})
    try:
        wait_for(
            lambda: bool(
                kube.request(kube_admin, "GET", f"/api/v1/namespaces/{fresh}/serviceaccounts")[
                    "items"
                ]
            ),
            10,
            "the default service account of a namespace made after the restarts",
        )
        create(kube_admin, fresh, pod_manifest("after", annotations={RUN_MS: "100"}))
        wait_for_pod(kube_admin, fresh, "after", lambda p: phase(p) == "Succeeded", timeout=10)
    finally:
        kube.request(kube_admin, "DELETE", f"/api/v1/namespaces/{fresh}")


def test_metrics_text_is_the_apiserver_prometheus_endpoint(control_plane: ControlPlane) -> None:
    assert "# TYPE apiserver_request_total counter" in control_plane.metrics_text()
