"""The live Spark UI inside Airflow, with no ingress (docs/spark_ui.md): a FastAPI app the
api-server mounts at /sparkk8s, which forwards GET and HEAD under a task instance's path to
its driver's UI through kube-apiserver's pod proxy, with the task's `spark_k8s` connection.

A request passes Airflow's own check first (the auth manager must allow its user to read
that DAG's task instances: 401/403 otherwise), before the XCom is read and before any
request to Kubernetes. Paths and rewrites are application/spark_ui.py's; the request is
services/spark_ui_proxy.py's.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import RedirectResponse, StreamingResponse

from airflow_provider_sparkk8s.application.spark_ui import (
    PLUGIN_PREFIX,
    UI_ROUTE,
    XCOM_KEY,
    SparkUiTarget,
    TaskInstanceUi,
    UnsafePath,
    root_path,
)
from airflow_provider_sparkk8s.errors import KubeConnectionError
from airflow_provider_sparkk8s.hooks.spark_k8s import SparkK8sHook
from airflow_provider_sparkk8s.kube.settings import ClientSettings
from airflow_provider_sparkk8s.services.spark_ui_proxy import KubeClients, open_spark_ui
from airflow_provider_sparkk8s.version_compat import (
    airflow_plugin_class,
    conf,
    dag_reader_dependency,
    task_instance_xcom,
)

TASK_INSTANCE_ROUTE = UI_ROUTE + "/{dag_id}/{run_id}/{task_id}/{map_index}"
METHODS = ["GET", "HEAD"]


def task_ui(dag_id: str, run_id: str, task_id: str, map_index: int) -> TaskInstanceUi:
    root = root_path(conf.get("api", "base_url", fallback="") or "")
    return TaskInstanceUi(dag_id, run_id, task_id, map_index, root=root)


def published_target(dag_id: str, run_id: str, task_id: str, map_index: int) -> SparkUiTarget:
    """Where the task instance's driver UI is: the XCom its operator published (a
    dependency, run in a thread: it reads the metadata DB)."""
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


def connection_settings(conn_id: str) -> ClientSettings:
    """The `spark_k8s` connection's client settings (read as the hook's Test button does)."""
    return SparkK8sHook(kubernetes_conn_id=conn_id).get_settings()


def build_app(read_check: Any = None) -> FastAPI:
    """The app; `read_check` replaces Airflow's DAG read check (tests without Airflow's DB)."""
    app = FastAPI(title="Spark UI through Airflow", docs_url=None, redoc_url=None)
    # Airflow's check, resolved before the endpoint's own dependencies (the XCom read).
    reader = [Depends(read_check or dag_reader_dependency())]

    @app.api_route(TASK_INSTANCE_ROUTE, methods=METHODS, dependencies=reader)
    async def spark_ui_root(dag_id: str, run_id: str, task_id: str, map_index: int) -> Any:
        return RedirectResponse(task_ui(dag_id, run_id, task_id, map_index).base + "/", 302)

    @app.api_route(TASK_INSTANCE_ROUTE + "/{rest:path}", methods=METHODS, dependencies=reader)
    async def spark_ui_page(
        request: Request,
        dag_id: str,
        run_id: str,
        task_id: str,
        map_index: int,
        rest: str,
        target: SparkUiTarget = Depends(published_target),  # noqa: B008 - FastAPI's idiom
    ) -> Any:
        client = await clients_of(app).get(target.conn_id)
        try:
            answer = await open_spark_ui(
                client,
                target,
                task_ui(dag_id, run_id, task_id, map_index).base,
                method=request.method,
                rest=rest,
                query=request.url.query,
                headers=request.headers.items(),
            )
        except UnsafePath as error:
            raise HTTPException(400, str(error)) from None
        except KubeConnectionError as error:
            raise HTTPException(502, str(error)) from None
        response = StreamingResponse(answer.body, status_code=answer.status)
        response.raw_headers = [
            (name.lower().encode("latin-1"), value.encode("latin-1"))
            for name, value in answer.headers
        ]
        return response

    app.state.settings_for = connection_settings
    app.state.clients = weakref.WeakKeyDictionary()
    return app


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
