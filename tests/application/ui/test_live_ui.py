"""The Spark UI's paths, conf and header rules (application/ui/live_ui.py), on plain data."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_provider_sparkk8s.application.ui import live_ui as spark_ui
from airflow_provider_sparkk8s.application.ui.live_ui import (
    LinkRewriter,
    SparkUiTarget,
    TaskInstanceUi,
    UnsafePath,
)
from airflow_provider_sparkk8s.errors import SparkConfError

TARGET = SparkUiTarget("spark_k8s_default", "team-a", "pi-1a2b-driver", 4040)
UPSTREAM = "/api/v1/namespaces/team-a/pods/pi-1a2b-driver:4040/proxy"
TI = TaskInstanceUi("etl", "manual__2026-12-02T01:02:03+00:00", "pi", -1)
BASE = "/sparkk8s/ui/etl/manual__2026-12-02T01:02:03+00:00/pi/-1"


def test_the_base_quotes_each_id_as_the_api_server_would_and_ends_without_a_slash():
    assert TI.base == BASE
    assert spark_ui.api_server_form(BASE) == BASE  # unchanged by its rewrite
    assert TaskInstanceUi("a b", "r/1", "t", 3).base == "/sparkk8s/ui/a%20b/r%2F1/t/3"
    behind = TaskInstanceUi("d", "r", "t", root=spark_ui.root_path("https://h/airflow/"))
    assert behind.base == "/airflow/sparkk8s/ui/d/r/t/-1"
    assert spark_ui.root_path("http://127.0.0.1:8080") == spark_ui.root_path(None) == ""


def test_the_upstream_prefix_is_the_api_servers_pod_proxy():
    assert TARGET.upstream_prefix == UPSTREAM
    assert spark_ui.upstream_path(TARGET, "jobs/") == UPSTREAM + "/jobs/"
    assert spark_ui.upstream_path(TARGET, "") == UPSTREAM + "/"
    assert (
        spark_ui.upstream_path(TARGET, "api/v1/applications") == UPSTREAM + "/api/v1/applications"
    )


@pytest.mark.parametrize("rest", ["..", "../services/x", "jobs/../../secrets", "./jobs"])
def test_dot_segments_never_leave_the_driver(rest):
    with pytest.raises(UnsafePath, match="dot segments"):
        spark_ui.upstream_path(TARGET, rest)


def test_path_characters_are_quoted_for_the_upstream():
    assert spark_ui.upstream_path(TARGET, "a b/c?d") == UPSTREAM + "/a%20b/c%3Fd"


def test_the_target_round_trips_through_xcom_and_bad_values_are_none():
    assert SparkUiTarget.from_xcom(TARGET.to_xcom()) == TARGET
    assert SparkUiTarget.from_xcom(None) is None
    assert SparkUiTarget.from_xcom({"conn_id": "c"}) is None
    assert SparkUiTarget.from_xcom({**TARGET.to_xcom(), "port": "x"}) is None


def test_proxy_base_is_set_unless_the_user_chose_a_proxy_or_no_ui():
    assert spark_ui.with_proxy_base({"a": "1"}, BASE) == {"a": "1", "spark.ui.proxyBase": BASE}
    own = {"spark.ui.proxyBase": "/mine"}
    assert spark_ui.with_proxy_base(own, BASE) == own
    reverse = {"spark.ui.reverseProxy": "TRUE"}
    assert spark_ui.with_proxy_base(reverse, BASE) == reverse
    off = {"spark.ui.enabled": "false"}
    assert spark_ui.with_proxy_base(off, BASE) == off
    assert spark_ui.proxied_by_us(spark_ui.with_proxy_base({}, BASE), BASE)
    assert not spark_ui.proxied_by_us(own, BASE)


def test_the_ui_port_comes_from_the_conf():
    assert spark_ui.ui_port({}) == 4040
    assert spark_ui.ui_port({"spark.ui.port": " 4050 "}) == 4050
    with pytest.raises(SparkConfError, match=r"spark\.ui\.port.*abc"):
        spark_ui.ui_port({"spark.ui.port": "abc"})


def test_dag_or_task_ids_that_spark_scripts_misread_are_reported():
    assert TaskInstanceUi("history", "r", "t").reserved_segment() == "history"
    assert TaskInstanceUi("d", "r", "proxy").reserved_segment() == "proxy"
    assert TI.reserved_segment() is None


def test_only_listed_request_headers_reach_the_driver_and_never_airflows_cookie():
    sent = spark_ui.forwarded_request_headers(
        [
            ("Cookie", "_token=secret"),
            ("Authorization", "Bearer secret"),
            ("Accept", "text/html"),
            ("If-None-Match", '"x"'),
            ("Accept-Encoding", "gzip"),
            ("X-Forwarded-Host", "evil"),
        ]
    )
    assert sent == {"accept": "text/html", "if-none-match": '"x"', "accept-encoding": "identity"}


@pytest.mark.parametrize(
    ("location", "expected"),
    [
        # Spark's redirect to the bare path, prefixed by the API server.
        (UPSTREAM + "/jobs/", BASE + "/jobs/"),
        # A link Spark wrote under proxyBase, prefixed by the API server.
        (UPSTREAM + BASE + "/jobs/job/?id=1", BASE + "/jobs/job/?id=1"),
        (UPSTREAM, BASE),
        # As kube-apiserver 1.35 answers it: naming itself as the host.
        ("http://127.0.0.1:6443" + UPSTREAM + "/jobs/", BASE + "/jobs/"),
        (BASE + "/stages/", BASE + "/stages/"),
        ("https://elsewhere.example/x", "https://elsewhere.example/x"),
        (UPSTREAM + "x/", UPSTREAM + "x/"),  # not the prefix, only a name that starts alike
    ],
)
def test_locations_map_back_under_the_base(location, expected):
    assert spark_ui.browser_location(location, UPSTREAM, BASE) == expected


def test_response_headers_drop_hop_by_hop_cookies_and_length_and_map_location():
    headers = [
        ("Content-Type", "text/html"),
        ("Connection", "keep-alive, X-Custom"),
        ("X-Custom", "1"),
        ("Keep-Alive", "timeout=5"),
        ("Transfer-Encoding", "chunked"),
        ("Set-Cookie", "JSESSIONID=1"),
        ("Content-Length", "12"),
        ("Location", UPSTREAM + "/jobs/"),
        ("Cache-Control", "no-cache"),
    ]
    assert spark_ui.response_headers(headers, UPSTREAM, BASE) == [
        ("Content-Type", "text/html"),
        ("Location", BASE + "/jobs/"),
        ("Cache-Control", "no-cache"),
    ]


# What Spark 4.3's HttpSecurityFilter sends by default (a fresh nonce per page).
SPARK_CSP = (
    "default-src 'self'; script-src 'self' 'nonce-abc'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; object-src 'none'; base-uri 'self'; frame-ancestors 'self'"
)


def test_sparks_csp_and_protections_pass_as_sent_even_if_connection_names_them():
    headers = [
        ("Connection", "close, Content-Security-Policy, X-Frame-Options"),
        ("Content-Security-Policy", SPARK_CSP),
        ("X-Frame-Options", "SAMEORIGIN"),
        ("X-Content-Type-Options", "nosniff"),
        ("X-XSS-Protection", "1; mode=block"),
        ("Set-Cookie", "JSESSIONID=1"),
    ]
    assert spark_ui.response_headers(headers, UPSTREAM, BASE) == [
        ("Content-Security-Policy", SPARK_CSP),
        ("X-Frame-Options", "SAMEORIGIN"),
        ("X-Content-Type-Options", "nosniff"),
        ("X-XSS-Protection", "1; mode=block"),
    ]


def test_only_get_and_head_are_forwarded_and_the_rest_is_refused_with_the_reason():
    assert spark_ui.refused_method("GET") is None
    assert spark_ui.refused_method("head") is None
    for method in ("POST", "PUT", "PATCH", "DELETE"):
        reason = spark_ui.refused_method(method)
        assert reason and "read-only" in reason and method in reason
        assert "mark the task instance failed" in reason


@pytest.mark.parametrize(
    "rest", ["jobs/job/kill/", "stages/stage/kill", "history/app-1/jobs/job/kill/"]
)
def test_sparks_kill_endpoints_are_refused_for_get_too(rest):
    # spark.ui.actionsViaGetEnabled makes them kill on a GET with the page's CSRF token.
    for method in ("GET", "HEAD", "POST"):
        assert "read-only" in (spark_ui.refused_method(method, rest) or "")
    assert spark_ui.refused_method("GET", "jobs/job/") is None
    assert spark_ui.refused_method("GET", "stages/stage/") is None


def test_is_html():
    assert spark_ui.is_html("text/html;charset=utf-8")
    assert not spark_ui.is_html("application/json")
    assert not spark_ui.is_html(None)


PAGE = (
    f'<a href="{UPSTREAM}{BASE}/jobs/">Jobs</a>'
    f'<link href="{UPSTREAM}{BASE}/static/webui.css"/>'
    f'<a href="{UPSTREAM}/environment/">bare</a>'
    f"<script>setUIRoot('{BASE}')</script>"
).encode()
EXPECTED = (
    f'<a href="{BASE}/jobs/">Jobs</a>'
    f'<link href="{BASE}/static/webui.css"/>'
    f'<a href="{BASE}/environment/">bare</a>'
    f"<script>setUIRoot('{BASE}')</script>"
).encode()


def _rewrite(chunks: list[bytes]) -> bytes:
    rewriter = LinkRewriter(UPSTREAM, BASE)
    return b"".join(rewriter.feed(chunk) for chunk in chunks) + rewriter.flush()


def test_html_links_map_back_under_the_base():
    assert _rewrite([PAGE]) == EXPECTED


def test_a_base_the_api_server_rewrote_differently_maps_back_too():
    """An id with a `/`: the API server writes the unescaped path back, `r/1` for `r%2F1`."""
    base = TaskInstanceUi("etl", "r/1", "pi").base
    assert base == "/sparkk8s/ui/etl/r%2F1/pi/-1"
    rewritten = UPSTREAM + "/sparkk8s/ui/etl/r/1/pi/-1/jobs/"
    rewriter = LinkRewriter(UPSTREAM, base)
    page = rewriter.feed(f'<a href="{rewritten}">'.encode()) + rewriter.flush()
    assert page == f'<a href="{base}/jobs/">'.encode()
    assert spark_ui.browser_location(rewritten, UPSTREAM, base) == base + "/jobs/"


@given(st.lists(st.integers(min_value=0, max_value=len(PAGE)), max_size=12))
def test_any_chunking_gives_the_same_page(cuts):
    points = sorted({0, len(PAGE), *cuts})
    chunks = [PAGE[a:b] for a, b in itertools.pairwise(points)]
    assert _rewrite(chunks) == EXPECTED


@given(st.binary(max_size=200))
def test_bodies_without_the_prefix_pass_unchanged(body):
    if UPSTREAM.encode() in body:
        return
    half = len(body) // 2
    assert _rewrite([body[:half], body[half:]]) == body
