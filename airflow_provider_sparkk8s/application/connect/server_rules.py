"""A Spark Connect server as a DAG's resource; pure: its conf, its driver pod template, its
URL, and when it is ready or has ended.

A deliberate departure from spark-submit, outside the spark-submit CLI path (which refuses
the Connect server in cluster mode, as Spark does): the server's driver is rendered through
the same feature steps, with main class `SparkConnectServer` and no primary resource, so the
pod's entrypoint runs it as Spark runs it, a client-mode driver in the pod that creates its
executors. The gRPC port (15002 unless `spark.connect.grpc.binding.port` says otherwise) is
on the driver Service from Spark 4.1 (driver_service); the server exists from Spark 4.0.

Access: Spark's pre-shared token (`spark.connect.authenticate.token`, Spark 4.0; the server
falls back to the env var SPARK_CONNECT_AUTHENTICATE_TOKEN). The token reaches the driver
only as that env var, from a Secret owned by the driver pod (secret_confs), never through
the conf ConfigMap, the XCom or the trigger's kwargs.

Idle timeout and maximum lifetime: the server has neither, so a watcher container beside the
driver (`services/connect/idle_watch_program.py`, run from the same image) reads the driver's own
status API and deletes the driver pod when no job has run for the idle timeout, or when the
lifetime is over; the pod's `activeDeadlineSeconds` (lifetime + a margin) is the cluster's own
backstop when the watcher cannot act. Deleting the pod takes its executors, Service,
ConfigMap and Secret with it (owner references), so a forgotten server leaves nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.monitoring.reducer import DRIVER_CONTAINER, Pod
from airflow_provider_sparkk8s.records import record
from airflow_provider_sparkk8s.submission.conf_values import is_dns1123_label
from airflow_provider_sparkk8s.submission.secret_confs import DRIVER_ENV
from airflow_provider_sparkk8s.submission.secret_confs import ENABLED_KEY as SECRET_CONFS_KEY

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
FIRST_LINE = (4, 0, 0)
GRPC_PORT = 15002
PORT_KEY = "spark.connect.grpc.binding.port"
ADDRESS_KEY = "spark.connect.grpc.binding.address"
TOKEN_KEY = "spark.connect.authenticate.token"
TOKEN_ENV = "SPARK_CONNECT_AUTHENTICATE_TOKEN"
WATCHER_CONTAINER = "connect-idle-watch"
TEMPLATE_CONTAINER_KEY = "spark.kubernetes.driver.podTemplateContainerName"
# The cluster's own end of the lifetime comes this much after the watcher's.
DEADLINE_MARGIN_SECONDS = 60
ADDRESSES = ("service", "pod_ip")
MODES = ("setup", "teardown")


@record
class Lifetime:
    """When a server whose teardown never ran ends by itself."""

    idle_timeout: int  # seconds with no job running and none started
    max_lifetime: int  # seconds since the watcher started

    def check(self) -> None:
        for key, value in (
            ("idle_timeout", self.idle_timeout),
            ("max_lifetime", self.max_lifetime),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise SparkConfError(key, str(value), "a positive number of seconds")
        if self.idle_timeout > self.max_lifetime:
            raise SparkConfError(
                "idle_timeout",
                str(self.idle_timeout),
                f"at most max_lifetime ({self.max_lifetime})",
            )


def server_conf(
    conf: Mapping[str, str], spark_version: tuple[int, ...], *, authenticated: bool
) -> dict[str, str]:
    """The user's conf with what a Connect server needs; refuses what would defeat it."""
    if spark_version < FIRST_LINE:
        raise SparkConfError(
            "spark_version", ".".join(map(str, spark_version)), "4.0 or later (Spark Connect)"
        )
    for key in (TOKEN_KEY, DRIVER_ENV + TOKEN_ENV):
        if key in conf:
            # A token in the conf would sit in the ConfigMap and the rendered fields.
            raise SparkConfError(key, "<redacted>", "no value: set token_conn_id instead")
    result = dict(conf)
    result.setdefault(PORT_KEY, str(GRPC_PORT))
    # Bind the pod's own address (Spark's entrypoint sets the variable from status.podIP),
    # not every interface; Spark expands ${env:...} for this typed conf.
    result.setdefault(ADDRESS_KEY, "${env:SPARK_DRIVER_BIND_ADDRESS}")
    result[TEMPLATE_CONTAINER_KEY] = DRIVER_CONTAINER
    if authenticated:
        result[SECRET_CONFS_KEY] = "true"
    return result


def token_conf(token: str) -> dict[str, str]:
    """The conf entry that becomes the driver's env var from its Secret (secret_confs)."""
    return {DRIVER_ENV + TOKEN_ENV: token}


def driver_template(
    image: str, lifetime: Lifetime, watcher_source: str, ui_port: int, grpc_port: int = GRPC_PORT
) -> dict[str, Any]:
    """The driver pod template: the Spark container (its status API on the pod's address,
    where the watcher finds it) and the idle watcher beside it."""
    pod_ip = {"valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}
    spark = {
        "name": DRIVER_CONTAINER,
        # Spark's UI binds SPARK_LOCAL_IP when set, else every interface.
        "env": [{"name": "SPARK_LOCAL_IP", **pod_ip}],
    }
    watcher = {
        "name": WATCHER_CONTAINER,
        "image": image,
        "command": ["python3", "-c", watcher_source],
        "env": [
            {"name": "POD_IP", **pod_ip},
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {
                "name": "POD_NAMESPACE",
                "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}},
            },
            {"name": "SPARK_UI_PORT", "value": str(ui_port)},
            {"name": "CONNECT_PORT", "value": str(grpc_port)},
            {"name": "IDLE_TIMEOUT_SECONDS", "value": str(lifetime.idle_timeout)},
            {"name": "MAX_LIFETIME_SECONDS", "value": str(lifetime.max_lifetime)},
        ],
        "resources": {
            "requests": {"cpu": "10m", "memory": "32Mi"},
            "limits": {"memory": "64Mi"},
        },
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "spec": {
            "activeDeadlineSeconds": lifetime.max_lifetime + DEADLINE_MARGIN_SECONDS,
            "containers": [spark, watcher],
        },
    }


def service_host(service_name: str, namespace: str) -> str:
    return f"{service_name}.{namespace}.svc"


def connect_url(host: str, port: int) -> str:
    """The `sc://` URL as published (XCom): never a token in it."""
    return f"sc://{host}:{port}"


def url_with_params(url: str, params: Mapping[str, str]) -> str:
    """`sc://host:port/;key=value;...` as Spark Connect clients read it."""
    if not url.startswith("sc://"):
        raise SparkConfError("url", url, "an sc://host:port URL")
    base = url.split("/;", 1)[0].rstrip("/")
    if not params:
        return base
    return base + "/;" + ";".join(f"{k}={quote(v, safe='')}" for k, v in params.items())


def check_address(address: str) -> None:
    if address not in ADDRESSES:
        raise SparkConfError("address", address, " or ".join(ADDRESSES))


def check_mode(mode: str) -> None:
    if mode not in MODES:
        raise SparkConfError("mode", mode, " or ".join(MODES))


def check_namespace(namespace: str) -> None:
    if not is_dns1123_label(namespace):
        raise SparkConfError("namespace", namespace, "a DNS-1123 label")


@record
class Waiting:
    detail: str


@record
class Ready:
    pod_ip: str


@record
class Ended:
    reason: str


Readiness = Waiting | Ready | Ended


def readiness(pod: Pod | None, port_answers: bool | None) -> Readiness:
    """The server's condition from its driver pod and whether its gRPC port answered
    (`None`: not tried, because the pod has no address yet)."""
    if pod is None:
        return Ended("the driver pod is gone (deleted, or ended by its idle timeout)")
    metadata = pod.get("metadata") or {}
    if metadata.get("deletionTimestamp"):
        return Ended(f"the driver pod {metadata.get('name')} is being deleted")
    status = pod.get("status") or {}
    phase = status.get("phase") or "Pending"
    if phase in ("Succeeded", "Failed") or _spark_terminated(status):
        # The watcher beside the driver may keep the pod Running for a moment after the
        # Spark container ended: that is an end too.
        return Ended(f"the driver pod {metadata.get('name')} ended: {_why(status, phase)}")
    if phase == "Running" and status.get("podIP") and port_answers:
        return Ready(str(status["podIP"]))
    if phase == "Running":
        return Waiting("the driver runs; its gRPC port does not answer yet")
    return Waiting(f"the driver pod is {phase}")


def _spark_terminated(status: Mapping[str, Any]) -> bool:
    return any(
        container.get("name") == DRIVER_CONTAINER
        and (container.get("state") or {}).get("terminated")
        for container in status.get("containerStatuses") or []
    )


def _why(status: Mapping[str, Any], phase: str) -> str:
    parts = [phase]
    if status.get("reason"):
        parts.append(str(status["reason"]))
    for container in status.get("containerStatuses") or []:
        if container.get("name") != DRIVER_CONTAINER:
            continue
        terminated = (container.get("state") or {}).get("terminated") or {}
        if terminated:
            parts.append(f"{terminated.get('reason')}, exit code {terminated.get('exitCode')}")
        message = terminated.get("message")
        if message:
            parts.append(str(message).strip()[-300:])
    return ", ".join(parts)


def host_for(address: str, ready: Ready, service_name: str, namespace: str) -> str:
    """Where clients dial: the Service's DNS name (in the cluster), or the pod's IP (a worker
    outside the cluster's DNS that reaches pod addresses)."""
    return ready.pod_ip if address == "pod_ip" else service_host(service_name, namespace)
