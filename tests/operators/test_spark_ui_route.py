"""The task's Spark UI route and link URLs (operators/spark_ui_route.py): through Airflow
unless the deployment routes the UI itself, and each configured link's URL."""

from __future__ import annotations

import logging

from airflow_provider_sparkk8s.application.following.tracked import TrackedApplication
from airflow_provider_sparkk8s.application.task.task_identity import TaskInstanceRef
from airflow_provider_sparkk8s.application.ui.live_ui import PROXY_BASE_KEY
from airflow_provider_sparkk8s.links.spark_k8s import DRIVER_POD_TEMPLATE_KEY, SPARK_UI_TEMPLATE_KEY
from airflow_provider_sparkk8s.operators.spark_ui_route import SparkUiRoute, task_ui
from testenv.fakes import FakeTaskInstance

LOG = logging.getLogger("sparkk8s.test.ui_route")
REF = TaskInstanceRef("etl", "spark_pi", "manual__1")
APP = TrackedApplication("spark-abc", "team-a", "pi-1-driver", "spark-kubernetes-driver", "t0")


def test_the_ui_goes_through_airflow_unless_switched_off_or_routed_by_a_template():
    base = task_ui(REF).base
    assert SparkUiRoute(True, {}, "c").routes({}, base)
    assert not SparkUiRoute(False, {}, "c").routes({}, base)
    assert not SparkUiRoute(True, {SPARK_UI_TEMPLATE_KEY: "https://ui/{driver_pod}"}, "c").routes(
        {}, base
    )
    assert not SparkUiRoute(True, {}, "c").routes({PROXY_BASE_KEY: "/mine"}, base)


def test_the_base_goes_into_the_conf_and_the_submitted_conf_gives_the_target():
    route = SparkUiRoute(True, {}, "spark_a")
    base = route.base_for({"spark.k": "v"}, REF, LOG)
    assert base == task_ui(REF).base
    target, routed = route.target({"spark.k": "v", PROXY_BASE_KEY: base}, REF)
    assert routed == base and target is not None and target.conn_id == "spark_a"
    assert route.target({"spark.k": "v"}, REF) == (None, None)
    assert SparkUiRoute(False, {}, "c").base_for({"spark.k": "v"}, REF, LOG) is None


def test_a_resumed_try_routes_the_ui_only_if_its_target_was_published():
    route = SparkUiRoute(True, {}, "c")
    ti = FakeTaskInstance()
    context = {"ti": ti}
    assert route.resumed_base(context, {}) is None
    ti.xcom["spark_ui"] = {"conn_id": "c", "namespace": "team-a", "driver_pod": "d", "port": 4040}
    assert route.resumed_base(context, {}) == task_ui(REF).base


def test_each_configured_template_gives_a_link_and_the_ui_through_airflow_fills_in():
    templates = {DRIVER_POD_TEMPLATE_KEY: "https://k8s/{namespace}/{driver_pod}"}
    urls = SparkUiRoute(True, templates, "c").link_urls(APP, None)
    assert list(urls.values()) == ["https://k8s/team-a/pi-1-driver"]
    with_ui = SparkUiRoute(True, templates, "c").link_urls(APP, "/sparkk8s/ui/x")
    assert any(url.endswith("/sparkk8s/ui/x/") for url in with_ui.values())
