"""The test control plane serves container logs (issue 2): `pods/log` through the
real API server reaches KWOK's kubelet server, which replays the generated
Spark-like driver and executor logs (testenv/kwok_logs.py)."""

from __future__ import annotations

import datetime

import pytest
from kubernetes.client import ApiClient, CoreV1Api
from kubernetes.client.exceptions import ApiException

from testenv.controlplane import ControlPlane
from testenv.harness.pods import HOLD, RUN_MS, create, phase, pod_manifest, wait_for_pod
from testenv.kwok_logs import DRIVER_LINES, EXECUTOR_LINES, LOG_DATE_OFFSET

pytestmark = pytest.mark.controlplane

DRIVER = "spark-kubernetes-driver"
EXECUTOR = "spark-kubernetes-executor"


def _texts(lines: tuple[tuple[str, str], ...]) -> list[str]:
    return [text for _, text in lines]


def test_driver_log_is_read_through_the_api_server_while_running(
    control_plane: ControlPlane, namespace: str, kube_admin: ApiClient
) -> None:
    create(kube_admin, namespace, pod_manifest("driver", annotations={HOLD: "true"}))
    wait_for_pod(kube_admin, namespace, "driver", lambda pod: phase(pod) == "Running")
    core = CoreV1Api(kube_admin)

    text = core.read_namespaced_pod_log("driver", namespace, container=DRIVER)

    assert text.splitlines() == _texts(DRIVER_LINES)
    lines = text.splitlines()
    assert any(line.startswith("INFO SparkContext: Running Spark version") for line in lines)
    assert any(line.startswith("driver program output") for line in lines)


def test_log_options_timestamps_tail_and_since_are_honoured(
    control_plane: ControlPlane, namespace: str, kube_admin: ApiClient
) -> None:
    create(kube_admin, namespace, pod_manifest("driver", annotations={RUN_MS: "300"}))
    wait_for_pod(kube_admin, namespace, "driver", lambda pod: phase(pod) == "Succeeded")
    core = CoreV1Api(kube_admin)

    stamped = core.read_namespaced_pod_log("driver", namespace, container=DRIVER, timestamps=True)
    stamps = [line.split(" ", 1)[0] for line in stamped.splitlines()]
    assert [line.split(" ", 1)[1] for line in stamped.splitlines()] == _texts(DRIVER_LINES)
    assert stamps == sorted(stamps)
    # Dated after the control plane started, so a since-submission query keeps them.
    first = datetime.datetime.fromisoformat(stamps[0][:26] + "+00:00")
    ahead = first - datetime.datetime.now(datetime.UTC)
    assert LOG_DATE_OFFSET - datetime.timedelta(hours=1) < ahead <= LOG_DATE_OFFSET

    tail = core.read_namespaced_pod_log("driver", namespace, container=DRIVER, tail_lines=2)
    assert tail.splitlines() == _texts(DRIVER_LINES)[-2:]
    recent = core.read_namespaced_pod_log("driver", namespace, container=DRIVER, since_seconds=5)
    assert recent.splitlines() == _texts(DRIVER_LINES)


def test_executor_has_its_own_log_and_other_containers_have_none(
    control_plane: ControlPlane, namespace: str, kube_admin: ApiClient
) -> None:
    create(
        kube_admin,
        namespace,
        pod_manifest("executor", annotations={HOLD: "true"}, container_names=(EXECUTOR, "sidecar")),
    )
    wait_for_pod(kube_admin, namespace, "executor", lambda pod: phase(pod) == "Running")
    core = CoreV1Api(kube_admin)

    text = core.read_namespaced_pod_log("executor", namespace, container=EXECUTOR)
    assert text.splitlines() == _texts(EXECUTOR_LINES)

    with pytest.raises(ApiException) as missing:
        core.read_namespaced_pod_log("executor", namespace, container="sidecar")
    assert missing.value.status is not None and missing.value.status >= 400
    assert "no logs found" in str(missing.value.body)
