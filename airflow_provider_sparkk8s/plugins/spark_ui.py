"""The live Spark UI inside Airflow, with no ingress (docs/spark_ui.md): a FastAPI app the
api-server mounts at /sparkk8s, which forwards GET and HEAD under a task instance's path to
its driver's UI through kube-apiserver's pod proxy, with the task's `spark_k8s` connection.
Other methods (the UI's kill forms) are refused with the reason: the plugin checks read
access only. Spark's Content-Security-Policy and its other protections pass as sent.

Only what the task itself submitted is proxied (issue 44): the connection is the one the
task's serialized definition names (`kubernetes_conn_id`), the namespace the one it submits
to; the `spark_ui` XCom only names the driver pod, and must name that connection and
namespace too, and the pod must carry the task instance's identity labels (a GET with the
task's connection) before anything is proxied. Refusals, kube-apiserver's 401/403 included,
are the plugin's own messages (application/ui/spark_ui_access.py).

Once the driver is gone (the pod proxy's 404 for the pod, or its 503), the same link serves
the application from the Spark History Server the connection's `history_server_url` extra
(else `[sparkk8s] history_server_url`) names: a page of the driver's UI redirects to the same
page there, under the same base (application/ui/history_ui.py).

A request passes Airflow's own check first (the auth manager must allow its user to read
that DAG's task instances: 401/403 otherwise), before the XCom is read and before any
request to Kubernetes. A connection whose kubeconfig runs an exec credential plugin is refused
here (403, naming the connection and the setting) unless `[sparkk8s]
allow_credential_commands_in_api_server` is True: the api-server runs no connection's code,
as Airflow's security model keeps that to workers and the triggerer. Paths and rewrites are
application/ui/live_ui.py's; the request is services/ui/spark_ui_proxy.py's.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Mapping
from typing import Any

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import RedirectResponse, StreamingResponse

from airflow_provider_sparkk8s.application.task.task_identity import TaskInstanceRef
from airflow_provider_sparkk8s.application.ui.history_ui import (
    HISTORY_SERVER_URL_OPTION,
    driver_gone,
    gone_detail,
    head_needs_a_get,
    history_page,
    is_server_path,
    unavailable_reason,
)
from airflow_provider_sparkk8s.application.ui.live_ui import (
    PLUGIN_PREFIX,
    PROXIED_METHODS,
    UI_ROUTE,
    XCOM_KEY,
    SparkUiTarget,
    TaskInstanceUi,
    UnsafePath,
    refused_method,
    root_path,
)
from airflow_provider_sparkk8s.application.ui.spark_ui_access import (
    DEFINITION_FIELDS,
    TaskDefinition,
    UiRefused,
    api_refusal,
    check_hint,
    found_definition,
    is_api_refusal,
    needs_rendered,
    task_connection,
    task_namespace,
)
from airflow_provider_sparkk8s.errors import CredentialCommandRefused, KubeConnectionError
from airflow_provider_sparkk8s.hooks.spark_k8s import SparkK8sHook, connection_extras
from airflow_provider_sparkk8s.kube.async_client import AsyncKubeClient
from airflow_provider_sparkk8s.kube.settings import ClientSettings
from airflow_provider_sparkk8s.records import record
from airflow_provider_sparkk8s.services.ui.history_ui_proxy import open_history_ui
from airflow_provider_sparkk8s.services.ui.spark_ui_proxy import (
    CheckedDrivers,
    KubeClients,
    ProxiedAnswer,
    checked_driver,
    open_spark_ui,
)
from airflow_provider_sparkk8s.version_compat import (
    airflow_plugin_class,
    conf,
    dag_reader_dependency,
    rendered_task_fields,
    task_definition,
    task_instance_xcom,
)

# The operator's XCom of the application (its `application_id` names it on the History Server).
APPLICATION_XCOM_KEY = "spark_application"
TASK_INSTANCE_ROUTE = UI_ROUTE + "/{dag_id}/{run_id}/{task_id}/{map_index}"
METHODS = list(PROXIED_METHODS)
# Answered with the plugin's refusal (405), never forwarded (application/ui/live_ui.py).
REFUSED_METHODS = ["POST", "PUT", "PATCH", "DELETE"]


def task_ui(dag_id: str, run_id: str, task_id: str, map_index: int) -> TaskInstanceUi:
    root = root_path(conf.get("api", "base_url", fallback="") or "")
    return TaskInstanceUi(dag_id, run_id, task_id, map_index, root=root)


def published_target(dag_id: str, run_id: str, task_id: str, map_index: int) -> SparkUiTarget:
    """Where the task instance's driver UI is, as its operator published it (XCom
    `spark_ui`; a dependency, run in a thread: it reads the metadata DB). A hint only: its
    connection and namespace must be the task's own, its pod is checked (`trusted_target`)."""
    value = task_instance_xcom(dag_id, run_id, task_id, map_index, XCOM_KEY)
    target = SparkUiTarget.from_xcom(value)
    if target is None:
        raise HTTPException(
            404,
            f"No Spark UI for task {task_id!r} (map index {map_index}) of run {run_id!r} of DAG "
            f"{dag_id!r}: its operator published none (not a SparkK8sSubmitOperator, not "
            "submitted yet, or spark_ui_proxy=False)",
        )
    return target


def definition_of(dag_id: str, run_id: str, task_id: str, map_index: int) -> TaskDefinition | None:
    """The task's definition in the serialized DAG of the version the task instance ran."""
    found = task_definition(dag_id, run_id, task_id, map_index, DEFINITION_FIELDS)
    return None if found is None else TaskDefinition(*found)


def rendered_of(dag_id: str, run_id: str, task_id: str, map_index: int) -> Mapping[str, Any] | None:
    value = rendered_task_fields(dag_id, run_id, task_id, map_index)
    return value if isinstance(value, Mapping) else None


async def trusted_target(
    app: FastAPI, ids: tuple[str, str, str, int], ref: TaskInstanceRef, hint: SparkUiTarget
) -> tuple[AsyncKubeClient, SparkUiTarget | None]:
    """The task's own connection's client and its checked driver (None: the XCom's pod is
    gone). The connection comes from the task's definition, the namespace from it or from
    what the task rendered (else the connection's); the XCom must name both, and its pod
    must carry the task instance's labels (application/ui/spark_ui_access.py). Nothing is sent
    before the connection and namespace are settled, and nothing with the XCom's own."""
    checked = app.state.checked.get(hint, ref)
    if checked is not None:  # settled a moment ago (a page's assets)
        return await clients_of(app).get(checked.conn_id), checked
    task = ref.describe()
    read = await asyncio.to_thread(lambda: app.state.definition_for(*ids))
    definition = found_definition(read, task)
    conn_id = task_connection(definition, task)
    client = await clients_of(app).get(conn_id)
    rendered = None
    if needs_rendered(definition):
        rendered = await asyncio.to_thread(lambda: app.state.rendered_for(*ids))
    namespace = task_namespace(definition, rendered, client.settings.effective_namespace(), task)
    check_hint(hint, conn_id, namespace)
    checked = await checked_driver(client, conn_id, hint, ref)
    if checked is not None:
        app.state.checked.put(hint, ref, checked)
    return client, checked


# Off by default, as Airflow's own `[core] test_connection` is: the api-server runs no code
# that a connection names unless the deployment says so.
CREDENTIAL_COMMANDS_OPTION = "allow_credential_commands_in_api_server"


def connection_settings(conn_id: str) -> ClientSettings:
    """The `spark_k8s` connection's client settings (read as the hook's Test button does);
    CredentialCommandRefused for an exec credential plugin, unless the deployment allows it.
    Reading the settings runs nothing: the plugin's command would run at the first request."""
    settings = SparkK8sHook(kubernetes_conn_id=conn_id).get_settings()
    allowed = conf.getboolean("sparkk8s", CREDENTIAL_COMMANDS_OPTION, fallback=False)
    if settings.exec_command and not allowed:
        raise CredentialCommandRefused(
            conn_id, settings.exec_command[0], "Airflow's api-server", CREDENTIAL_COMMANDS_OPTION
        )
    return settings


def history_server_url(conn_id: str) -> str | None:
    """The connection's `history_server_url` extra, else `[sparkk8s]`'s (None: no fallback)."""
    try:
        extras = connection_extras(SparkK8sHook.get_connection(conn_id).extra_dejson)
    except Exception:  # noqa: BLE001 - then the config alone
        extras = {}
    for value in (extras.get(HISTORY_SERVER_URL_OPTION),
                  conf.get("sparkk8s", HISTORY_SERVER_URL_OPTION, fallback=None)):  # fmt: skip
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def application_id(dag_id: str, run_id: str, task_id: str, map_index: int) -> str | None:
    value = task_instance_xcom(dag_id, run_id, task_id, map_index, APPLICATION_XCOM_KEY)
    found = value.get("application_id") if isinstance(value, dict) else None
    return str(found) if found else None


async def _status_body(
    client: AsyncKubeClient, target: SparkUiTarget, base: str, rest: str, request: Request
) -> bytes:
    """The first chunk of the same page asked as a GET, if it is a 404 again (a HEAD's
    answer has no body to judge by)."""
    probe = await open_spark_ui(
        client, target, base, method="GET", rest=rest, query=request.url.query,
        headers=request.headers.items(),
    )  # fmt: skip
    try:
        # Started in any case: only a started body's close releases the upstream answer.
        head = await anext(probe.body, b"")
    finally:
        await probe.body.aclose()  # type: ignore[attr-defined]
    return head if probe.status == 404 else b""


async def _first_chunk(answer: ProxiedAnswer) -> tuple[bytes, ProxiedAnswer]:
    """The body's first chunk, and the answer with its body whole again."""
    head = await anext(answer.body, b"")

    async def whole() -> Any:
        yield head
        async for chunk in answer.body:
            yield chunk

    return head, ProxiedAnswer(answer.status, answer.headers, whole())


def _streamed(answer: ProxiedAnswer) -> StreamingResponse:
    response = StreamingResponse(answer.body, status_code=answer.status)
    response.raw_headers = [
        (name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in answer.headers
    ]
    return response


def build_app(read_check: Any = None) -> FastAPI:
    """The app; `read_check` replaces Airflow's DAG read check (tests without Airflow's DB)."""
    app = FastAPI(title="Spark UI through Airflow", docs_url=None, redoc_url=None)
    # Airflow's check, resolved before the endpoint's own dependencies (the XCom read).
    reader = [Depends(read_check or dag_reader_dependency())]
    _add_root_route(app, reader)
    _add_refused_routes(app, reader)
    _add_page_route(app, reader)
    app.state.settings_for = connection_settings
    app.state.history_url_for = history_server_url
    app.state.application_id_for = application_id
    app.state.definition_for = definition_of
    app.state.rendered_for = rendered_of
    app.state.checked = CheckedDrivers()
    app.state.clients = weakref.WeakKeyDictionary()
    return app


def _add_root_route(app: FastAPI, reader: list[Any]) -> None:
    """The task instance's UI path itself redirects to its root page (Spark's links are
    relative to it)."""

    @app.api_route(TASK_INSTANCE_ROUTE, methods=METHODS, dependencies=reader)
    async def spark_ui_root(dag_id: str, run_id: str, task_id: str, map_index: int) -> Any:
        return RedirectResponse(task_ui(dag_id, run_id, task_id, map_index).base + "/", 302)


def _add_refused_routes(app: FastAPI, reader: list[Any]) -> None:
    @app.api_route(TASK_INSTANCE_ROUTE, methods=REFUSED_METHODS, dependencies=reader)
    @app.api_route(
        TASK_INSTANCE_ROUTE + "/{rest:path}", methods=REFUSED_METHODS, dependencies=reader
    )
    async def spark_ui_change(request: Request) -> Any:
        """A state-changing request (Spark's kill forms POST): refused before the XCom, the
        definition or Kubernetes is read; Airflow's read check still comes first."""
        reason = refused_method(request.method, request.path_params.get("rest", ""))
        raise HTTPException(405, reason or "", headers={"Allow": ", ".join(PROXIED_METHODS)})


@record
class _PageRequest:
    """One page of a task instance's driver UI, as asked: what each step serving it reads."""

    request: Request
    ids: tuple[str, str, str, int]  # dag_id, run_id, task_id, map_index
    base: str  # the task instance's UI path under the api-server
    rest: str  # the page's path below it


def _add_page_route(app: FastAPI, reader: list[Any]) -> None:
    @app.api_route(TASK_INSTANCE_ROUTE + "/{rest:path}", methods=METHODS, dependencies=reader)
    async def spark_ui_page(
        request: Request,
        dag_id: str,
        run_id: str,
        task_id: str,
        map_index: int,
        rest: str,
        hint: SparkUiTarget = Depends(published_target),  # noqa: B008 - FastAPI's idiom
    ) -> Any:
        refusal = refused_method(request.method, rest)
        if refusal is not None:  # a kill by GET: nothing sent to Kubernetes
            raise HTTPException(405, refusal, headers={"Allow": ", ".join(PROXIED_METHODS)})
        ids = (dag_id, run_id, task_id, map_index)
        page = _PageRequest(request, ids, task_ui(*ids).base, rest)
        ref = TaskInstanceRef(dag_id, task_id, run_id, map_index)
        return await _serve_page(app, page, ref, hint)


async def _serve_page(
    app: FastAPI, page: _PageRequest, ref: TaskInstanceRef, hint: SparkUiTarget
) -> Any:
    """The page from the checked driver through the pod proxy; kube-apiserver's refusal as
    the plugin's; a driver that is gone served from the History Server."""
    client, target = await _trusted_or_refused(app, page.ids, ref, hint)
    if target is None:  # the pod is gone: its application from the History Server
        return await _after_the_driver(app, page, hint)
    answer = await _open_driver_page(client, target, page)
    content_type = {n.lower(): v for n, v in answer.headers}.get("content-type")
    if is_api_refusal(answer.status, content_type):  # kube-apiserver's, not the driver's
        await answer.body.aclose()  # type: ignore[attr-defined]
        refused = api_refusal(answer.status, "get pods/proxy", target.namespace, target.conn_id)
        raise HTTPException(refused.status, refused.message)
    if answer.status not in (404, 503):
        return _streamed(answer)
    return await _not_served_by_the_driver(app, page, client, target, answer, content_type)


async def _trusted_or_refused(
    app: FastAPI, ids: tuple[str, str, str, int], ref: TaskInstanceRef, hint: SparkUiTarget
) -> tuple[AsyncKubeClient, SparkUiTarget | None]:
    """`trusted_target`, its refusals as the plugin's HTTP answers."""
    try:
        return await trusted_target(app, ids, ref, hint)
    except CredentialCommandRefused as error:
        raise HTTPException(403, str(error)) from None
    except UiRefused as error:
        raise HTTPException(error.status, error.message) from None
    except KubeConnectionError as error:
        raise HTTPException(502, str(error)) from None


async def _open_driver_page(
    client: AsyncKubeClient, target: SparkUiTarget, page: _PageRequest
) -> ProxiedAnswer:
    """The page asked of the driver through the pod proxy; an unsafe path is a 400, no
    answer from kube-apiserver a 502."""
    try:
        return await open_spark_ui(
            client,
            target,
            page.base,
            method=page.request.method,
            rest=page.rest,
            query=page.request.url.query,
            headers=page.request.headers.items(),
        )
    except UnsafePath as error:
        raise HTTPException(400, str(error)) from None
    except KubeConnectionError as error:
        raise HTTPException(502, str(error)) from None


async def _not_served_by_the_driver(
    app: FastAPI,
    page: _PageRequest,
    client: AsyncKubeClient,
    target: SparkUiTarget,
    answer: ProxiedAnswer,
    content_type: str | None,
) -> Any:
    """A 404 or 503 through the proxy: the driver's own answer (passed on), or the pod
    proxy's for a driver that is gone (then the History Server's page, if it has one)."""
    original = answer.body
    head, answer = await _first_chunk(answer)
    if head_needs_a_get(page.request.method, answer.status, content_type):
        head = await _status_body(client, target, page.base, page.rest, page.request)
    if not driver_gone(answer.status, content_type, head):
        return _streamed(answer)
    if answer.status == 404:
        await original.aclose()  # type: ignore[attr-defined]
        return await _after_the_driver(app, page, target)
    url = await asyncio.to_thread(app.state.history_url_for, target.conn_id)
    app_id = await _application_id(app, page.ids) if url else None
    if url is not None and app_id is not None:
        await original.aclose()  # type: ignore[attr-defined]
        return await _from_history(page, url, app_id)
    return _streamed(answer)  # 503: the pod is there but does not serve (yet, or now)


async def _application_id(app: FastAPI, ids: tuple[str, str, str, int]) -> str | None:
    read_id = app.state.application_id_for
    return await asyncio.to_thread(lambda: read_id(*ids))  # type: ignore[no-any-return]


async def _after_the_driver(app: FastAPI, page: _PageRequest, target: SparkUiTarget) -> Any:
    """A deleted driver's page: from the History Server the task's connection (or
    [sparkk8s]) names, else the plugin's own 404 (not the API server's Status)."""
    url = await asyncio.to_thread(app.state.history_url_for, target.conn_id)
    app_id = await _application_id(app, page.ids) if url else None
    if url is not None and app_id is not None:
        return await _from_history(page, url, app_id)
    reason = unavailable_reason(url, target.conn_id)
    raise HTTPException(404, gone_detail(target.namespace, target.driver_pod, reason))


async def _from_history(page: _PageRequest, url: str, app_id: str) -> Any:
    """The page from the History Server at `url`, for the application `app_id`."""
    request = page.request
    if not is_server_path(page.rest):
        query = f"?{request.url.query}" if request.url.query else ""
        return RedirectResponse(history_page(page.rest, app_id, page.base) + query, 302)
    try:
        answer = await open_history_ui(
            url, page.base, method=request.method, rest=page.rest, query=request.url.query,
            headers=request.headers.items(),
        )  # fmt: skip
    except OSError as error:
        raise HTTPException(502, f"the History Server did not answer: {error}") from None
    return _streamed(answer)


def clients_of(app: FastAPI) -> KubeClients:
    """The app's clients on the running event loop (an httpx client serves one loop)."""
    loop = asyncio.get_running_loop()
    pool = app.state.clients.get(loop)
    if pool is None:
        pool = app.state.clients[loop] = KubeClients(app.state.settings_for)
    return pool


AirflowPlugin: Any = airflow_plugin_class()


class SparkK8sUiPlugin(AirflowPlugin):
    """Registered through the `airflow.plugins` entry point (pyproject.toml)."""

    name = "sparkk8s_spark_ui"
    fastapi_apps = [  # noqa: RUF012 - AirflowPlugin's own attribute
        {"app": build_app(), "url_prefix": PLUGIN_PREFIX, "name": "Spark UI through Airflow"}
    ]
