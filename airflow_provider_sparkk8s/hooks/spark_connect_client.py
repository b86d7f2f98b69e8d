"""A remote SparkSession on a server SparkK8sConnectServerOperator published, from its XCom.

Needs `pyspark-client` (Spark Connect's Python client, no JVM) in the worker, of the
server's Spark line. The token comes from the connection the XCom names (its password), and
goes as gRPC call metadata (`authorization: Bearer <token>`, what Spark's pre-shared-key
interceptor reads). pyspark's own channel builder would open TLS whenever a `token` is in the
URL and the host is not `localhost`, while the server speaks plaintext gRPC; so this helper
sends the header itself on a plaintext channel, unless `use_ssl=True` asks for TLS.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

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


def remote_session(
    published: Mapping[str, Any], *, token: str | None = None, use_ssl: bool = False
) -> Any:
    """A SparkSession (Spark Connect) on the published server; `token` overrides the
    connection's."""
    from pyspark.sql.connect.client import DefaultChannelBuilder
    from pyspark.sql.connect.session import SparkSession

    token = token if token is not None else token_of(published)
    url = str(published["url"])
    builder = DefaultChannelBuilder(url + ("/;use_ssl=true" if use_ssl else ""))
    if token is not None:
        if use_ssl:
            builder.set(DefaultChannelBuilder.PARAM_TOKEN, token)
        else:
            builder.add_interceptor(_bearer_interceptor(token))
    return SparkSession.builder.channelBuilder(builder).create()
