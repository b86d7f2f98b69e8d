"""The live Spark UI end to end: a DAG's SparkK8sSubmitOperator (real Spark 4.3.0) runs under
the lane's real Airflow (tests/e2e/conftest.py's `airflow`: api-server with the plugin,
scheduler, dag-processor, triggerer; the DAG has a connection of its own) on the real node, whose pods have 10.244.x addresses that
kube-apiserver proxies to. While the driver runs, the task's "Spark UI" extra link answers
through the real api-server (Airflow's auth, the XCom the operator published, the pod proxy
with the task's connection): the Jobs page, a static file, the REST API; and headless
chromium, logged into Airflow, follows the link from the task instance's page.

The driver stays up as long as the test looks: the DAG's executors ask for a node label
(testenv/airflow_dags/spark_ui_live.py) that the node gets only at the end, so the one job waits,
listed as RUNNING. It writes its event log (the operator's `event_log_dir`) into a hostPath
folder that a real History Server on the host reads (testenv/history_server.py), which the
task's connection names (`history_server_url`). After the end, the driver deleted, the same
link serves the application from that History Server: through the api-server (GET and
HEAD), and in chromium again, whose page must name the live application's id.
Screenshots land in the test's temp dir; `make screenshots` writes them to
docs/screenshots."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from kubernetes import config as k8s_config

from airflow_provider_sparkk8s.application.ui.live_ui import TaskInstanceUi
from testenv.airflow_dags.spark_ui_live import APP_NAME, DAG_ID, TASK_ID
from testenv.airflow_stack import ADMIN_USER, AirflowStack
from testenv.controlplane import ControlPlane
from testenv.history_server import HistoryServer
from testenv.real_spark import REAL_SPARK_TIMINGS
from testenv.spark_ui_live import LiveRun, events_folder, live_spark_ui
from tests.conftest import _fresh_namespace
from tests.e2e.browser_driver import run_browser

pytestmark = [pytest.mark.controlplane, pytest.mark.airflow, pytest.mark.timeout(900)]

SCREENSHOT_DIR_VARIABLE = "SPARKK8S_SCREENSHOT_DIR"


@pytest.fixture(scope="module")
def ui_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("spark-ui-airflow")


@pytest.fixture(scope="module")
def history(ui_root: Path) -> Iterator[HistoryServer]:
    """The History Server of the driver's event log folder (the hostPath on the host)."""
    with HistoryServer(events_folder(ui_root)) as server:
        yield server


@pytest.fixture(scope="module")
def live_run(
    ui_root: Path,
    history: HistoryServer,
    airflow: AirflowStack,
    real_plane: ControlPlane,
    request: pytest.FixtureRequest,
) -> Iterator[LiveRun]:
    started = time.monotonic()
    admin = k8s_config.new_client_from_config(config_file=str(real_plane.admin_kubeconfig))
    try:
        with (
            contextmanager(_fresh_namespace)(real_plane, request) as namespace,
            live_spark_ui(airflow, real_plane, admin, namespace, ui_root, history.url) as run,
        ):
            for name, seconds in run.timings.items():
                REAL_SPARK_TIMINGS[f"Spark UI e2e: {name}"] = seconds
            REAL_SPARK_TIMINGS["Spark UI e2e: start -> UI through Airflow"] = (
                time.monotonic() - started
            )
            yield run
    finally:
        admin.close()


def test_the_link_is_the_task_instances_path_under_the_plugin(live_run: LiveRun):
    assert live_run.base == TaskInstanceUi(DAG_ID, live_run.run_id, TASK_ID, -1).base
    assert live_run.base.startswith(f"/sparkk8s/ui/{DAG_ID}/manual__"), live_run.base


def test_the_running_drivers_ui_answers_through_the_api_server(live_run: LiveRun):
    run, base = live_run, live_run.base
    redirect = run.get(base + "/", follow_redirects=False)
    assert redirect.status_code == 302, redirect.text
    assert redirect.headers["location"] == base + "/jobs/"

    jobs = run.get(base + "/jobs/")
    assert jobs.status_code == 200, jobs.text[:2000]
    html = jobs.text
    assert "Spark Jobs" in html and APP_NAME in html, html[:3000]
    assert f'href="{base}/static/webui.css"' in html, html[:3000]
    assert f"setUIRoot('{base}')" in html
    assert "/api/v1/namespaces/" not in html
    css = run.get(base + "/static/webui.css")
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
    assert len(css.content) > 1000

    (application,) = run.get(base + "/api/v1/applications").json()
    assert application["name"] == APP_NAME, application
    # The Pi job waits for its executor (held back by the node label): the driver is live.
    listed = run.get(f"{base}/api/v1/applications/{run.application_id()}/jobs").json()
    assert [job["status"] for job in listed] == ["RUNNING"], listed

    # Without Airflow's session cookie, the same page is refused.
    anonymous = httpx.get(run.stack.base_url + base + "/jobs/", timeout=60)
    assert anonymous.status_code == 401, anonymous.text


def _follow_the_link(live_run: LiveRun, tmp_path: Path, phase: str) -> dict[str, Any]:
    """Chromium logs into Airflow, opens the task instance and follows its Spark UI link."""
    screenshots = Path(os.environ.get(SCREENSHOT_DIR_VARIABLE) or tmp_path / "screenshots")
    screenshots.mkdir(parents=True, exist_ok=True)
    return run_browser(
        "spark_ui.mjs",
        {
            "baseUrl": live_run.stack.base_url,
            "username": ADMIN_USER,
            "password": live_run.stack.password,
            "taskInstancePath": f"/dags/{DAG_ID}/runs/{live_run.run_id}/tasks/{TASK_ID}",
            "screenshotDir": str(screenshots),
            "userDataDir": str(tmp_path / "chromium-profile"),
            "phase": phase,
        },
        tmp_path,
        timeout=400,
    )


def test_chromium_follows_the_spark_ui_link_from_the_task_instance(
    live_run: LiveRun, tmp_path: Path
):
    started = time.monotonic()
    report = _follow_the_link(live_run, tmp_path, "live")
    REAL_SPARK_TIMINGS["Spark UI e2e: browser login -> jobs -> executors"] = (
        time.monotonic() - started
    )
    base = live_run.base
    assert report["linkHref"] == live_run.stack.base_url + base + "/", report
    # The link's redirect landed on the Jobs page under the task instance's path.
    assert report["jobsUrl"] == live_run.stack.base_url + base + "/jobs/", report
    assert "Spark Jobs" in report["jobsText"] and APP_NAME in report["jobsText"], report
    assert "collect at" in report["jobsText"], report["jobsText"]  # the running Pi job
    loaded = {r["path"]: r for r in report["responses"]}
    css = loaded.get(base + "/static/webui.css")
    assert css and css["status"] == 200 and css["type"].startswith("text/css"), loaded
    sheet = [s for s in report["stylesheets"] if (s["href"] or "").endswith("/webui.css")]
    assert sheet and sheet[0]["rules"] > 10, report["stylesheets"]
    # The Executors page drew its table in the browser from the REST API, through the plugin.
    assert report["executorsUrl"] == live_run.stack.base_url + base + "/executors/", report
    assert "driver" in report["executorsText"], report["executorsText"]
    rest = [r for r in report["responses"] if "/api/v1/applications/" in r["path"]]
    assert rest and all(r["status"] == 200 for r in rest), rest
    # Spark's CSP reached the browser on the Jobs page, and the page ran under it.
    pages = [r for r in report["responses"] if r["path"] == base + "/jobs/"]
    assert pages and all(r["csp"] for r in pages), pages
    assert "default-src 'self'" in pages[0]["csp"] and "'nonce-" in pages[0]["csp"], pages
    # The running job's kill (a POST with Spark's CSRF token) is the plugin's refusal.
    assert report["killAction"] == base + "/jobs/job/kill/" and report["killHasToken"], report
    kills = [r for r in report["responses"] if r["method"] == "POST"]
    assert [(r["path"], r["status"]) for r in kills] == [(base + "/jobs/job/kill/", 405)], kills
    assert "read-only" in report["killText"], report["killText"]
    assert "mark the task instance failed" in report["killText"], report["killText"]
    listed = live_run.get(f"{base}/api/v1/applications/{live_run.application_id()}/jobs").json()
    assert [job["status"] for job in listed] == ["RUNNING"], listed  # not killed
    assert sorted(Path(f).name for f in report["screenshots"]) == [
        "spark-ui-executors.png",
        "spark-ui-jobs.png",
        "spark-ui-task-instance.png",
    ]


def test_the_run_succeeds_once_its_executor_may_start(live_run: LiveRun, history: HistoryServer):
    run = live_run
    run.release()
    with run.stack.client() as client:
        finished = run.stack.wait_run(client, DAG_ID, run.run_id, timeout=400)
    assert finished["state"] == "success", run.stack.tail("scheduler")
    # The driver wrote its event log through the hostPath, and the History Server read it.
    app = history.wait_for_application(run.live_application_id, 120)
    assert app["name"] == APP_NAME, app
    written = [p.name for p in history.log_dir.iterdir()]
    assert any(run.live_application_id in name for name in written), written  # rolling: a folder


def test_after_the_end_the_same_link_serves_the_history_servers_page(
    live_run: LiveRun, history: HistoryServer
):
    run, base, app_id = live_run, live_run.base, live_run.live_application_id
    # The driver is gone (on_finish_action=delete_pod): the link's pages redirect to the
    # same application's pages on the History Server, under the same base.
    gone = run.get(base + "/jobs/", follow_redirects=False)
    assert gone.status_code == 302, gone.text[:500]
    assert gone.headers["location"] == f"{base}/history/{app_id}/jobs/"
    root = run.get(base + "/", follow_redirects=False)  # the link itself
    assert root.headers.get("location") == gone.headers["location"], root
    page = run.get(gone.headers["location"])
    assert page.status_code == 200, page.text[:500]
    html = page.text
    assert "Spark Jobs" in html and APP_NAME in html, html[:3000]
    assert f"{base}/static/" in html and f"{base}/history/{app_id}/stages/" in html, html[:3000]
    listed = run.get(f"{base}/api/v1/applications/{app_id}/jobs").json()
    assert listed == history.api(f"applications/{app_id}/jobs")
    assert [job["status"] for job in listed] == ["SUCCEEDED"], listed
    # HEAD answers as GET does, without a body: the redirect, then the page.
    head = run.head(base + "/jobs/")
    assert head.status_code == 302 and head.content == b"", head
    assert head.headers["location"] == f"{base}/history/{app_id}/jobs/"
    head_page = run.head(head.headers["location"])
    assert head_page.status_code == 200 and head_page.content == b"", head_page
    # Without Airflow's session cookie, the History Server's page is refused too.
    anonymous = httpx.get(run.stack.base_url + f"{base}/history/{app_id}/jobs/", timeout=60)
    assert anonymous.status_code == 401, anonymous.text


def test_chromium_follows_the_same_link_to_the_history_server(live_run: LiveRun, tmp_path: Path):
    started = time.monotonic()
    report = _follow_the_link(live_run, tmp_path, "history")
    REAL_SPARK_TIMINGS["Spark UI e2e: browser login -> history jobs -> environment"] = (
        time.monotonic() - started
    )
    base, app_id = live_run.base, live_run.live_application_id
    origin = live_run.stack.base_url
    assert report["linkHref"] == origin + base + "/", report
    assert report["jobsUrl"] == f"{origin}{base}/history/{app_id}/jobs/", report
    text = report["jobsText"]
    assert "Spark Jobs" in text and APP_NAME in text and "Completed Jobs" in text, text
    assert "collect at" in text, text  # the Pi job the live page showed RUNNING
    loaded = {r["path"]: r for r in report["responses"]}
    css = loaded.get(base + "/static/webui.css")
    assert css and css["status"] == 200 and css["type"].startswith("text/css"), loaded
    # The History Server's Environment page names the application the live driver was.
    assert report["environmentUrl"] == f"{origin}{base}/history/{app_id}/environment/", report
    assert report["environmentAppId"] == app_id, report
    assert [Path(f).name for f in report["screenshots"]] == ["spark-ui-history-jobs.png"]
