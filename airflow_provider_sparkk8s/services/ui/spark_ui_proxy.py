"""One Spark UI request through kube-apiserver's pod proxy: the I/O under the plugin
(plugins/spark_ui.py); application/ui/live_ui.py decides the paths and the rewrites, and
application/ui/spark_ui_access.py which driver a task instance's link may reach."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterable

from airflow_provider_sparkk8s.application.task.task_identity import TaskInstanceRef
from airflow_provider_sparkk8s.application.ui.live_ui import (
    LinkRewriter,
    SparkUiTarget,
    forwarded_request_headers,
    is_html,
    response_headers,
    upstream_path,
)
from airflow_provider_sparkk8s.application.ui.spark_ui_access import (
    UiRefused,
    api_refusal,
    driver_ui_port,
    unexpected_answer,
)
from airflow_provider_sparkk8s.errors import KubeApiError, SparkConfError
from airflow_provider_sparkk8s.kube.async_client import AsyncKubeClient
from airflow_provider_sparkk8s.kube.settings import ClientSettings
from airflow_provider_sparkk8s.records import record
from airflow_provider_sparkk8s.services.pods.async_pods import AsyncPodRequests, AsyncPods

# A page and its assets reuse one client (keep-alive, no TLS handshake each); a connection
# edited in Airflow counts after this long.
CLIENT_TTL_SECONDS = 60.0
# A replaced client still streams the bodies it started; it closes this much later.
RETIRED_GRACE_SECONDS = 600.0
# A driver pod checked (its labels, its UI port) serves a page's assets without a GET each.
CHECKED_TTL_SECONDS = 10.0


class KubeClients:
    """One AsyncKubeClient per connection id on one event loop, its settings read (in a
    thread: the connection may come from the metadata DB) at most every `ttl` seconds."""

    def __init__(
        self,
        load_settings: Callable[[str], ClientSettings],
        *,
        ttl: float = CLIENT_TTL_SECONDS,
        grace: float = RETIRED_GRACE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        new_client: Callable[[ClientSettings], AsyncKubeClient] = AsyncKubeClient,
    ):
        self._load, self._ttl, self._grace, self._clock = load_settings, ttl, grace, clock
        self._new_client = new_client
        self._current: dict[str, tuple[float, AsyncKubeClient]] = {}
        self._retired: list[tuple[float, AsyncKubeClient]] = []

    async def get(self, conn_id: str) -> AsyncKubeClient:
        now = self._clock()
        await self._close_retired(now)
        kept = self._current.get(conn_id)
        if kept is not None and now < kept[0]:
            return kept[1]
        client = self._new_client(await asyncio.to_thread(self._load, conn_id))
        if kept is not None:
            self._retired.append((now + self._grace, kept[1]))
        self._current[conn_id] = (now + self._ttl, client)
        return client

    async def aclose(self) -> None:
        clients = [client for _, client in self._current.values()]
        clients += [client for _, client in self._retired]
        self._current, self._retired = {}, []
        for client in clients:
            await client.aclose()

    async def _close_retired(self, now: float) -> None:
        due = [client for until, client in self._retired if until <= now]
        self._retired = [(until, client) for until, client in self._retired if until > now]
        for client in due:
            await client.aclose()


@record
class ProxiedAnswer:
    status: int
    headers: list[tuple[str, str]]
    # The body as it arrives, HTML links mapped back; the upstream closes when it ends.
    body: AsyncIterator[bytes]


async def open_spark_ui(
    client: AsyncKubeClient,
    target: SparkUiTarget,
    base: str,
    *,
    method: str,
    rest: str,
    query: str,
    headers: Iterable[tuple[str, str]],
) -> ProxiedAnswer:
    """Send `method` for the UI page `rest` (the path after `base`) and answer as the driver
    did. Raises UnsafePath before any request for a path that would leave the UI."""
    path = upstream_path(target, rest)
    upstream = await client.open_proxied(method, path, query, forwarded_request_headers(headers))
    prefix = target.upstream_prefix
    rewriter = LinkRewriter(prefix, base) if is_html(upstream.headers.get("content-type")) else None

    async def body() -> AsyncIterator[bytes]:
        try:
            async for chunk in upstream.aiter_raw():
                yield rewriter.feed(chunk) if rewriter else chunk
            if rewriter:
                yield rewriter.flush()
        finally:
            await upstream.aclose()

    return ProxiedAnswer(
        status=upstream.status_code,
        headers=response_headers(upstream.headers.multi_items(), prefix, base),
        body=body(),
    )


async def checked_driver(
    client: AsyncPodRequests,
    conn_id: str,
    hint: SparkUiTarget,
    ref: TaskInstanceRef,
) -> SparkUiTarget | None:
    """The XCom's driver pod as a target, once a GET with the task's own connection shows
    it is the task instance's driver in the task's namespace (`hint`'s connection and
    namespace are the task's: application/ui/spark_ui_access.check_hint); None when there is
    no such pod (the driver is gone). UiRefused otherwise: the API server's refusals as the
    plugin's own message, its body left here."""
    try:
        pod = await AsyncPods(client).get(hint.namespace, hint.driver_pod)
    except SparkConfError:
        raise UiRefused(403, f"The spark_ui XCom names no pod name: {hint.driver_pod!r}") from None
    except KubeApiError as error:
        if error.status in (401, 403):
            raise api_refusal(error.status, "get pods", hint.namespace, conn_id) from None
        raise unexpected_answer(error.status, hint.namespace, hint.driver_pod) from None
    if pod is None:
        return None
    return SparkUiTarget(
        conn_id, hint.namespace, hint.driver_pod, driver_ui_port(pod, ref, hint.namespace)
    )


class CheckedDrivers:
    """Targets settled within the last `ttl` seconds, by (task instance, XCom hint): a
    page's assets follow it without reading the task's definition or getting the pod each."""

    def __init__(
        self, *, ttl: float = CHECKED_TTL_SECONDS, clock: Callable[[], float] = time.monotonic
    ):
        self._ttl, self._clock = ttl, clock
        self._checked: dict[tuple[str, SparkUiTarget], tuple[float, SparkUiTarget]] = {}

    def get(self, hint: SparkUiTarget, ref: TaskInstanceRef) -> SparkUiTarget | None:
        now = self._clock()
        self._checked = {key: kept for key, kept in self._checked.items() if kept[0] > now}
        kept = self._checked.get((ref.digest, hint))
        return kept[1] if kept else None

    def put(self, hint: SparkUiTarget, ref: TaskInstanceRef, target: SparkUiTarget) -> None:
        self._checked[(ref.digest, hint)] = (self._clock() + self._ttl, target)
