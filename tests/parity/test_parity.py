"""sparkk8s-submit sends what real spark-submit sent, scenario by scenario, per Spark line.

The goldens were captured from real spark-submit (`make parity-refresh`); this test needs no
JVM: it runs `sparkk8s-submit` with the same arguments, environment and local files
against the same recording endpoint, normalises both captures the same way (only what is
random per submission) and compares request by request. Each case runs twice: against the
recorder alone, which answers as it answered spark-submit (no server: `make check` runs
it), and with the recorder sending each of our requests on to the test control plane's
kube-apiserver (tests/parity/apiserver.py), so the server's own decoding and validation
judge the bytes we send and its answers lead to the same requests.
"""

from __future__ import annotations

import difflib
import io
import json
import secrets
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

from airflow_provider_sparkk8s.cli.submit import run
from airflow_provider_sparkk8s.errors import SparkConfError, SubmissionError
from testenv.controlplane import ControlPlane
from testenv.harness import kube
from testenv.harness.recorder import RecordingServer
from testenv.harness.waiting import wait_for
from tests.parity.apiserver import ApiServerUpstream
from tests.parity.normalise import normalise_submission
from tests.parity.scenarios import (
    ALL_LINES,
    Scenario,
    all_scenarios,
    golden_path,
    real_tmp,
    uploaded_files,
)
from tests.support.volcano import CRD_NAME, POD_GROUP_CRD

CAPTURED = [
    (scenario, line)
    for scenario in all_scenarios()
    for line in scenario.spark_lines
    if golden_path(scenario, line).exists()
]
CASES = [pytest.param(scenario, line, id=f"{scenario.name}[{line}]") for scenario, line in CAPTURED]
# Refused before any request: nothing reaches the API server.
SENT_CASES = [
    pytest.param(scenario, line, id=f"{scenario.name}[{line}]")
    for scenario, line in CAPTURED
    if not scenario.expect_failure
]


CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
POD_GROUP_API = "/apis/scheduling.volcano.sh/v1beta1"
# Service accounts the scenarios name; the ServiceAccount admission plugin wants them to exist.
SERVICE_ACCOUNTS = ("spark-driver", "spark-exec", "ignored-sa", "template-sa")


@pytest.fixture(scope="module")
def apiserver(control_plane: ControlPlane) -> Iterator[ApiServerUpstream]:
    """One namespace on the real API server for every case of this module, deleted after."""
    api = k8s_config.new_client_from_config(config_file=str(control_plane.admin_kubeconfig))
    name = f"parity-{secrets.token_hex(3)}"
    kube.request(api, "POST", "/api/v1/namespaces", {"metadata": {"name": name}})
    upstream = ApiServerUpstream(
        control_plane.server,
        str(control_plane.ca_file),
        str(control_plane.admin_cert_file),
        str(control_plane.admin_key_file),
        name,
    )
    crd_created = _create_crd(api)  # Volcano's PodGroup, for its scenarios
    try:
        for account in SERVICE_ACCOUNTS:
            body = {"metadata": {"name": account}}
            kube.request(api, "POST", f"/api/v1/namespaces/{name}/serviceaccounts", body)
        path = f"/api/v1/namespaces/{name}/serviceaccounts/default"
        wait_for(lambda: kube.exists(api, path), 30, f"service account {name}/default")
        yield upstream
    finally:
        upstream.close_connection()
        kube.request(api, "DELETE", f"/api/v1/namespaces/{name}")
        if crd_created:  # later tests check the error without it
            kube.request(api, "DELETE", f"{CRDS}/{CRD_NAME}")
            wait_for(lambda: not kube.exists(api, POD_GROUP_API), 60, "the PodGroup API to go")
        api.close()


def _create_crd(api: Any) -> bool:
    try:
        kube.request(api, "POST", CRDS, POD_GROUP_CRD)
    except ApiException as error:
        if error.status != 409:
            raise
        return False
    wait_for(lambda: kube.exists(api, POD_GROUP_API), 30, "the PodGroup API")
    return True


def run_ours(
    scenario: Scenario, line: str, upstream: ApiServerUpstream | None = None
) -> dict[str, Any]:
    """Our requests and uploads (normalised), and the error when we refused."""
    try:
        return _run_ours(scenario, line, upstream)
    except SubmissionError as error:  # the API server refused what we sent
        pytest.fail(f"kube-apiserver refused the submission: {error}")
    finally:
        left = upstream.clean_up() if upstream is not None else []
        assert left == [], f"could not delete what the case created: {left}"


def _run_ours(scenario: Scenario, line: str, upstream: ApiServerUpstream | None) -> dict[str, Any]:
    with (
        tempfile.TemporaryDirectory(prefix="parity-") as tmp_name,
        RecordingServer(upstream=upstream) as server,
    ):
        tmp = Path(tmp_name)
        scenario.materialise(tmp)
        environ = {
            "HOME": str(tmp),
            "KUBECONFIG": str(tmp / "no-kubeconfig"),
            **scenario.environment(tmp),
        }
        # --spark-version goes first: everything after the primary resource is app args.
        argv = ["--spark-version", line, *scenario.argv(f"k8s://{server.url}", tmp)]
        refusal: SparkConfError | None = None
        try:
            outcome = run(argv, environ=environ, out=io.StringIO(), err=io.StringIO())
            assert outcome.exit_code == 0
        except SparkConfError as error:
            refusal = error
        tmp_dirs = [str(tmp), str(real_tmp(tmp))]
        ours = normalise_submission(
            server.recording.as_list(), uploaded_files(scenario, tmp), tmp_dirs
        )
        ours["refusal"] = refusal
        return ours


def _diff(expected: dict[str, Any], actual: dict[str, Any]) -> str:
    """A unified diff of the two bodies (spark-submit's first), for a readable failure."""
    left = json.dumps(expected["body"], indent=1, sort_keys=True).splitlines()
    right = json.dumps(actual["body"], indent=1, sort_keys=True).splitlines()
    return "\n".join(difflib.unified_diff(left, right, "spark-submit", "sparkk8s", lineterm=""))


def _summary(requests: list[dict[str, Any]]) -> list[str]:
    return [f"{r['method']} {r['path']}" for r in requests]


@pytest.mark.parametrize(("scenario", "line"), CASES)
def test_same_requests_as_spark_submit(scenario: Scenario, line: str) -> None:
    """Against the recorder alone, as the goldens were captured."""
    assert_as_captured(scenario, line, None)


@pytest.mark.parametrize(("scenario", "line"), SENT_CASES)
def test_the_api_server_accepts_the_same_requests(
    scenario: Scenario, line: str, apiserver: ApiServerUpstream
) -> None:
    assert_as_captured(scenario, line, apiserver)


def assert_as_captured(scenario: Scenario, line: str, upstream: ApiServerUpstream | None) -> None:
    captured = json.loads(golden_path(scenario, line).read_text())
    result = run_ours(scenario, line, None if scenario.expect_failure else upstream)
    if scenario.expect_failure:
        # spark-submit refused before any request; so do we, before writing anything (it
        # may have uploaded the files ahead of the bad one and left them: see the golden).
        assert captured["requests"] == [] and result["requests"] == []
        assert result["refusal"] is not None, "spark-submit refused: " + captured["failure"]
        assert result["uploads"] == {}
        # Our message names what spark-submit's does not always: the key and the value.
        missing = [text for text in scenario.refused if text not in str(result["refusal"])]
        assert missing == [], f"{result['refusal']} does not name {missing}"
        return
    assert result["refusal"] is None, str(result["refusal"])
    # The uploaded files, byte for byte, in the same spark-upload-<uuid> folders.
    assert result["uploads"] == captured.get("uploads", {})
    golden, ours = captured["requests"], result["requests"]
    assert _summary(ours) == _summary(golden)
    for expected, actual in zip(golden, ours, strict=True):
        what = f"{expected['method']} {expected['path']}"
        assert actual["query"] == expected["query"], what
        assert actual["content_type"] == expected["content_type"], what
        assert actual["body"] == expected["body"], what + "\n" + _diff(expected, actual)


def test_there_are_enough_scenarios() -> None:
    """The issue asks for at least 30 scenarios over both lines, each line covered."""
    lines = [line for _, line in (case.values for case in CASES)]
    assert len(CASES) >= 30
    assert set(lines) == set(ALL_LINES), "every Spark line we support has its own captures"


def test_every_scenario_has_a_capture_on_each_of_its_lines() -> None:
    """A capture missing (spark-submit failed at refresh) would silently drop a case."""
    missing = [
        f"{scenario.name}[{line}]"
        for scenario in all_scenarios()
        for line in scenario.spark_lines
        if not golden_path(scenario, line).exists()
    ]
    assert missing == []
