"""A Spark Connect server's I/O: plan it through the submission service's feature steps, send
it, wait for its gRPC port, tear it down (application/connect/server_rules.py holds the rules).

Not the spark-submit CLI path: the server is planned from a `SubmitArguments` built here
(main class SparkConnectServer, no primary resource), never from a command line, so the
CLI's refusal of the Connect server in cluster mode stays as Spark has it.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Mapping
from pathlib import Path

from airflow_provider_sparkk8s import objects
from airflow_provider_sparkk8s.application.connect import server_rules as rules
from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.kube.sync_client import KubeClient
from airflow_provider_sparkk8s.monitoring.reducer import Pod
from airflow_provider_sparkk8s.records import record
from airflow_provider_sparkk8s.services.connect import idle_watch_program as connect_idle_watch
from airflow_provider_sparkk8s.services.pods.driver_pods import DriverPods, application_selector
from airflow_provider_sparkk8s.services.submit import submission
from airflow_provider_sparkk8s.services.submit.uploader import Storage
from airflow_provider_sparkk8s.submission.command_line.arguments import SubmitArguments
from airflow_provider_sparkk8s.submission.conf import MainAppResource
from airflow_provider_sparkk8s.submission.conf_values import version_tuple
from airflow_provider_sparkk8s.submission.features import basic_driver
from airflow_provider_sparkk8s.submission.naming import SubmissionIds, new_submission_ids
from airflow_provider_sparkk8s.submission.render import RenderedSubmission


@record
class StartedServer:
    """A sent server: what crosses a deferral and the XCom (no token)."""

    application_id: str
    namespace: str
    driver_pod: str
    service: str
    port: int


def watcher_source() -> str:
    """The idle watcher's program text, run by the watcher container."""
    return Path(connect_idle_watch.__file__).read_text(encoding="utf-8")


def plan_server(
    conf: Mapping[str, str],
    *,
    master: str,
    spark_version: str,
    image: str,
    lifetime: rules.Lifetime,
    token: str | None,
    ids: SubmissionIds | None = None,
) -> submission.Planned:
    """Every object of the server, rendered by the feature steps; bad input raises here."""
    lifetime.check()
    full = rules.server_conf(conf, version_tuple(spark_version), authenticated=token is not None)
    full.setdefault("spark.kubernetes.container.image", image)
    # The driver's own master: without it the server would run Spark in local mode.
    full["spark.master"] = master
    if token is not None:
        full.update(rules.token_conf(token))
    ui_port = int(full.get("spark.ui.port", basic_driver.DEFAULT_UI_PORT))
    arguments = SubmitArguments(
        action="submit",
        spark_conf=full,
        main_app_resource=MainAppResource("java", None),
        main_class=rules.SERVER_CLASS,
    )
    template = rules.driver_template(
        image, lifetime, watcher_source(), ui_port, int(full[rules.PORT_KEY])
    )
    return submission.plan(
        arguments,
        spark_version=spark_version,
        environ={},
        ids=ids or new_submission_ids(),
        spark_conf=full,
        driver_pod_template=template,
    )


def service_name(rendered: RenderedSubmission) -> str:
    for obj in rendered.resources:
        if obj.get("kind") == "Service":
            return str(obj["metadata"]["name"])
    raise SparkConfError("spark.kubernetes.driver.service", None, "the driver Service")


def grpc_port(planned: submission.Planned) -> int:
    return int(planned.spark_conf.get(rules.PORT_KEY, rules.GRPC_PORT))


def start(client: KubeClient, planned: submission.Planned, log: submission.Log) -> StartedServer:
    """Send every object (all or nothing, as a submission)."""
    sent = submission.submit(
        client, planned, lambda _path, props: Storage.from_spark_conf(props), log
    )
    return StartedServer(
        sent.app_id, sent.namespace, sent.driver_pod_name, service_name(planned.rendered),
        grpc_port(planned),
    )  # fmt: skip


def port_answers(host: str, port: int, timeout: float = 2.0) -> bool:
    """True when a TCP connection to the gRPC port opens: the server binds it only once
    its SparkContext and the Connect service have started."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


async def aport_answers(host: str, port: int, timeout: float = 2.0) -> bool:
    try:
        _reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    except (OSError, TimeoutError):
        return False
    writer.close()
    await writer.wait_closed()
    return True


def look(pod: Pod | None, port: int) -> rules.Readiness:
    """One look: the pod as read, its port tried when it has an address and runs."""
    status = (pod or {}).get("status") or {}
    address = status.get("podIP")
    answered = port_answers(address, port) if address and status.get("phase") == "Running" else None
    return rules.readiness(pod, answered)


def wait_ready(
    pods: DriverPods, server: StartedServer, timeout: float, poll: float = 1.0
) -> rules.Ready | rules.Ended:
    """The worker-side wait (deferrable=False): ready, ended, or Ended at the timeout."""
    deadline = time.monotonic() + timeout
    while True:
        state = look(pods.get(server.namespace, server.driver_pod), server.port)
        if isinstance(state, (rules.Ready, rules.Ended)):
            return state
        if time.monotonic() >= deadline:
            return rules.Ended(f"not ready after {timeout:.0f}s: {state.detail}")
        time.sleep(poll)


def teardown(pods: DriverPods, namespace: str, driver_pod: str, timeout: float = 120) -> list[str]:
    """Delete the driver pod (owner references take its executors, Service, ConfigMap and
    Secret) and wait for every pod of the application to go; the names still left."""
    pod = pods.get(namespace, driver_pod)
    if pod is None:
        return []
    app_id = objects.application_id(pod)
    pods.delete(namespace, driver_pod)
    names = {driver_pod}
    if app_id:
        listed = pods.list_pods(namespace, application_selector(app_id))
        names |= {name for name in map(objects.name, listed) if name}
    return pods.wait_gone(namespace, sorted(names), timeout)
