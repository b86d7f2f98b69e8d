"""The Spark UI link after the driver is gone (application/ui/history_ui.py), on plain data."""

from __future__ import annotations

import json

import pytest

from airflow_provider_sparkk8s.application.ui.history_ui import (
    browser_location,
    driver_gone,
    gone_detail,
    head_needs_a_get,
    history_page,
    is_server_path,
    unavailable_reason,
    upstream_url,
)
from airflow_provider_sparkk8s.application.ui.live_ui import UnsafePath

BASE = "/sparkk8s/ui/etl/manual__1/spark_pi/-1"
POD_GONE = json.dumps(
    {"kind": "Status", "status": "Failure", "reason": "NotFound",
     "details": {"name": "pi-driver", "kind": "pods"}, "code": 404}
).encode()  # fmt: skip


def test_the_driver_is_gone_on_the_api_servers_404_for_the_pod_or_its_503():
    assert driver_gone(404, "application/json", POD_GONE)
    assert driver_gone(503, "text/plain", b"error trying to reach service: connection refused")
    # The driver's own 404 (an unknown UI page) is HTML, and a 404 about another kind is not it.
    assert not driver_gone(404, "text/html", b"<html>Not Found</html>")
    assert not driver_gone(404, "application/json", POD_GONE.replace(b'"pods"', b'"services"'))
    assert not driver_gone(404, "application/json", b"{not json")
    assert not driver_gone(200, "application/json", POD_GONE)


def test_a_heads_json_404_is_asked_again_as_a_get_to_tell_the_pods_status_from_the_drivers():
    assert head_needs_a_get("HEAD", 404, "application/json")
    # A GET has its body; an HTML 404 is the driver's; a 503 says gone without a body.
    assert not head_needs_a_get("GET", 404, "application/json")
    assert not head_needs_a_get("HEAD", 404, "text/html;charset=utf-8")
    assert not head_needs_a_get("HEAD", 503, "application/json")
    assert not head_needs_a_get("HEAD", 404, None)


def test_a_gone_driver_without_a_history_server_says_why():
    unconfigured = unavailable_reason(None, "spark_k8s_prod")
    assert "history_server_url" in unconfigured and "'spark_k8s_prod'" in unconfigured
    assert "spark_application" in unavailable_reason("http://history:18080", "spark_k8s_prod")
    assert gone_detail("etl", "pi-driver", unconfigured) == (
        f"The Spark driver pod etl/pi-driver is gone, and {unconfigured}."
    )


def test_a_page_of_the_driver_goes_to_the_same_page_of_the_application_on_the_server():
    assert history_page("", "spark-1", BASE) == f"{BASE}/history/spark-1/jobs/"
    assert history_page("stages/stage/", "spark-1", BASE) == f"{BASE}/history/spark-1/stages/stage/"
    assert not is_server_path("jobs/")
    assert is_server_path("history/spark-1/jobs/") and is_server_path("api/v1/applications")
    assert is_server_path("static/webui.css")
    with pytest.raises(UnsafePath):
        is_server_path("static/../../etc")


def test_the_upstream_url_keeps_the_servers_own_path():
    assert upstream_url("http://h:18080", "/api/v1/x", "a=1") == "http://h:18080/api/v1/x?a=1"
    assert upstream_url("https://i/spark/", "/history/a/", "") == "https://i/spark/history/a/"


def test_a_history_server_redirect_lands_under_the_base():
    server = "http://history:18080"
    assert browser_location("http://history:18080/history/a/jobs/", server, BASE) == (
        f"{BASE}/history/a/jobs/"
    )
    assert browser_location(f"{BASE}/history/a/jobs/?x=1", server, BASE) == (
        f"{BASE}/history/a/jobs/?x=1"
    )
    assert browser_location("/spark/history/a/", "https://i/spark", BASE) == f"{BASE}/history/a/"
    assert browser_location("https://elsewhere/x", server, BASE) == "https://elsewhere/x"
