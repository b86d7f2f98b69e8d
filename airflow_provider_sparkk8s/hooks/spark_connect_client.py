"""A remote SparkSession on a server SparkK8sConnectServerOperator published, from its XCom.

Needs `pyspark-client` (Spark Connect's Python client, no JVM) in the worker, of the
server's Spark line. The token comes from the connection the XCom names (its password), and
goes as gRPC call metadata (`authorization: Bearer <token>`, what Spark's pre-shared-key
interceptor reads). pyspark's own channel builder would open TLS whenever a `token` is in the
URL and the host is not `localhost`, while the server speaks plaintext gRPC; so this helper
sends the header itself on a plaintext channel, unless `use_ssl=True` asks for TLS.

Before connecting it reads the server's driver pod through the spark_k8s connection and
tries its port (the setup's readiness rule): a server that ended (killed, failed, or gone by
its idle timeout) fails the client task with the pod and the reason, not with a gRPC
"connection refused". A server that serves is logged: its executors and its live sessions
(services/connect/status_read.py), never the token.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from airflow_provider_sparkk8s.application.connect import server_rules as rules
from airflow_provider_sparkk8s.errors import ConnectServerUnavailable
from airflow_provider_sparkk8s.hooks.spark_k8s import SparkK8sHook
from airflow_provider_sparkk8s.monitoring.reducer import Pod
from airflow_provider_sparkk8s.provider_info import DEFAULT_CONN_ID
from airflow_provider_sparkk8s.services.connect.server_lifecycle import look
from airflow_provider_sparkk8s.services.connect.status_read import server_status
from airflow_provider_sparkk8s.services.pods.driver_pods import DriverPods
from airflow_provider_sparkk8s.version_compat import BaseHook, mask_secret


def token_of(published: Mapping[str, Any]) -> str | None:
    conn_id = published.get("token_conn_id")
    if not conn_id:
        return None
    token = BaseHook.get_connection(conn_id).password
    if token:
        mask_secret(token)
    return str(token) if token else None


def _bearer_interceptor(token: str) -> Any:
    import grpc  # type: ignore[import-untyped]  # pyspark-client's dependency, no stubs

    class Bearer(
        grpc.UnaryUnaryClientInterceptor,  # type: ignore[misc]
        grpc.UnaryStreamClientInterceptor,  # type: ignore[misc]
        grpc.StreamUnaryClientInterceptor,  # type: ignore[misc]
        grpc.StreamStreamClientInterceptor,  # type: ignore[misc]
    ):
        def _with_token(self, details: Any) -> Any:
            metadata = [*(details.metadata or ()), ("authorization", f"Bearer {token}")]
            return details._replace(metadata=metadata)

        def _call(self, continuation: Callable[..., Any], details: Any, request: Any) -> Any:
            return continuation(self._with_token(details), request)

        intercept_unary_unary = _call
        intercept_unary_stream = _call
        intercept_stream_unary = _call
        intercept_stream_stream = _call

    return Bearer()


LOG = logging.getLogger(__name__)


def check_server(published: Mapping[str, Any], pods: DriverPods) -> Pod | None:
    """The server's driver pod; ConnectServerUnavailable unless the server is ready."""
    pod = pods.get(str(published["namespace"]), str(published["driver_pod"]))
    state = look(pod, int(published["port"]))
    if not isinstance(state, rules.Ready):
        why = state.reason if isinstance(state, rules.Ended) else state.detail
        raise ConnectServerUnavailable(
            f"Spark Connect server {published['namespace']}:{published['driver_pod']} "
            f"({published['url']}) is not serving: {why}"
        )
    return pod


def log_status(
    published: Mapping[str, Any], pods: DriverPods, pod: Pod | None, log: logging.Logger
) -> None:
    status = server_status(pods, published, pod)
    where = f"{published['namespace']}:{published['driver_pod']}"
    log.info("Spark Connect server %s: %s", where, status.executors)
    log.info("Spark Connect server %s: %s", where, status.sessions)


def remote_session(
    published: Mapping[str, Any],
    *,
    token: str | None = None,
    use_ssl: bool = False,
    kubernetes_conn_id: str | None = DEFAULT_CONN_ID,
    log: logging.Logger = LOG,
) -> Any:
    """A SparkSession (Spark Connect) on the published server; `token` overrides the
    connection's. `kubernetes_conn_id=None` skips the look at the server's pod and its
    status lines (a worker without access to its namespace)."""
    from pyspark.sql.connect.client import DefaultChannelBuilder
    from pyspark.sql.connect.session import SparkSession

    if kubernetes_conn_id is not None:
        hook = SparkK8sHook(kubernetes_conn_id)
        try:
            pods = DriverPods(hook.get_client())
            log_status(published, pods, check_server(published, pods), log)
        finally:
            hook.close()
    token = token if token is not None else token_of(published)
    url = str(published["url"])
    builder = DefaultChannelBuilder(url + ("/;use_ssl=true" if use_ssl else ""))
    if token is not None:
        if use_ssl:
            builder.set(DefaultChannelBuilder.PARAM_TOKEN, token)
        else:
            builder.add_interceptor(_bearer_interceptor(token))
    return SparkSession.builder.channelBuilder(builder).create()
