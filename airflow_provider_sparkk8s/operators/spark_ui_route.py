"""The task's Spark UI route and link URLs: whether the live UI goes through Airflow (the
provider's plugin, docs/spark_ui.md), where, and the URL of each configured link.

One value per look at the connection (`SparkUiRoute`): the operator's `spark_ui_proxy`, the
URL templates the connection's extras or `[sparkk8s]` configure, the connection's id. A Spark
UI URL template means the deployment routes the UI its own way (an ingress): its links then
stay as Spark makes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from airflow_provider_sparkk8s.application.following.tracked import TrackedApplication
from airflow_provider_sparkk8s.application.task.task_identity import TaskInstanceRef
from airflow_provider_sparkk8s.application.ui.live_ui import (
    XCOM_KEY as SPARK_UI_XCOM_KEY,
)
from airflow_provider_sparkk8s.application.ui.live_ui import (
    SparkUiTarget,
    TaskInstanceUi,
    proxied_by_us,
    root_path,
    ui_port,
    with_proxy_base,
)
from airflow_provider_sparkk8s.links.spark_k8s import SPARK_UI_TEMPLATE_KEY, link_urls
from airflow_provider_sparkk8s.records import record
from airflow_provider_sparkk8s.version_compat import conf as airflow_conf

if TYPE_CHECKING:
    from airflow_provider_sparkk8s.services.submit.submission import Log


def api_base_url() -> str:
    return airflow_conf.get("api", "base_url", fallback="") or ""


def task_ui(ref: TaskInstanceRef) -> TaskInstanceUi:
    """The task instance's Spark UI path, under the path Airflow is served at."""
    root = root_path(api_base_url())
    return TaskInstanceUi(ref.dag_id, ref.run_id, ref.task_id, ref.map_index, root=root)


@record
class SparkUiRoute:
    proxy: bool  # the operator's spark_ui_proxy
    templates: Mapping[str, str]  # the configured URL templates
    conn_id: str

    def routes(self, conf: Mapping[str, Any], base: str) -> bool:
        """Whether a submission of `conf` routes the UI's links through Airflow."""
        if not self.proxy or SPARK_UI_TEMPLATE_KEY in self.templates:
            return False
        return proxied_by_us(with_proxy_base(conf, base), base)

    def base_for(self, conf: Mapping[str, Any], ref: TaskInstanceRef, log: Log) -> str | None:
        """The Spark UI's path under Airflow for a submission of `conf` (the task run sets
        spark.ui.proxyBase to it), or None when the UI does not go through Airflow."""
        ui = task_ui(ref)
        if not self.routes(conf, ui.base):
            return None
        if ui.reserved_segment():
            log.warning(
                "The Spark UI through Airflow: %r is a path segment Spark's UI scripts read as "
                "their own proxy's, so its executors page may stay empty; rename the DAG or "
                "task to avoid it",
                ui.reserved_segment(),
            )
        return ui.base

    def target(
        self, submitted: Mapping[str, Any], ref: TaskInstanceRef
    ) -> tuple[SparkUiTarget | None, str | None]:
        """Where the driver's UI will be (its pod comes with the driver) and the UI's base
        under Airflow, if the submitted conf routes the UI's links through Airflow."""
        base = task_ui(ref).base
        if not (self.proxy and proxied_by_us(submitted, base)):
            return None, None
        return SparkUiTarget(self.conn_id, "", "", ui_port(submitted)), base

    def resumed_base(self, context: Any, conf: Mapping[str, Any]) -> str | None:
        """After a deferral: the UI's base, if the try published its target."""
        base = task_ui(TaskInstanceRef.from_context(context)).base
        # Asked only where the submission would have routed it: Airflow logs a missing XCom
        # as an error in the task log.
        if not self.routes(conf, base):
            return None
        ti = context["ti"]
        published = ti.xcom_pull(
            task_ids=ti.task_id, key=SPARK_UI_XCOM_KEY, map_indexes=ti.map_index
        )
        return base if SparkUiTarget.from_xcom(published) is not None else None

    def link_urls(self, app: TrackedApplication, ui_base: str | None) -> dict[str, str]:
        """{link XCom key: URL} for the configured URL templates."""
        values = {
            "namespace": app.namespace,
            "driver_pod": app.driver_pod,
            "application_id": app.application_id,
            "submission_id": app.submission_id,
            "conn_id": self.conn_id,
        }
        templates = dict(self.templates)
        if ui_base is not None and SPARK_UI_TEMPLATE_KEY not in templates:
            # No UI of the deployment's own: the one through Airflow (plugins/spark_ui.py).
            origin = urlsplit(api_base_url())._replace(path="", query="", fragment="")
            templates[SPARK_UI_TEMPLATE_KEY] = urlunsplit(origin) + ui_base + "/"
        return link_urls(templates, values)
