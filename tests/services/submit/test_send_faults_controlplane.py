"""200 submissions through a real fault-injecting proxy (Toxiproxy) in front of kube-apiserver,
in four phases: answers cut off mid-stream, connection resets, 429s from API Priority
and Fairness, and latency with jitter. Afterwards, on the real API server: no application
has two driver pods, every driver pod belongs to a submission that succeeded, every
ConfigMap, Service and NetworkPolicy is owned by a live driver pod, and every failure is a
clear error."""

from __future__ import annotations

import contextlib
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from airflow_provider_sparkk8s.errors import SparkK8sError
from airflow_provider_sparkk8s.kube.settings import ClientSettings
from airflow_provider_sparkk8s.kube.sync_client import KubeClient
from airflow_provider_sparkk8s.services.submit.send import submit
from airflow_provider_sparkk8s.submission import naming, render
from airflow_provider_sparkk8s.submission.conf import LocalInputs, MainAppResource
from testenv.controlplane import STATIC_TOKEN_USER
from testenv.harness.apf import SUBMITTER, grant, throttle_user, unthrottle
from testenv.harness.kube import request

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(400)]

# 200 in all; the 429 phase is the slow one (each refusal waits Retry-After), so it is short.
PER_PHASE = {"answers cut": 64, "resets": 64, "429s": 12, "latency": 60}
THREADS = 4


def rendered(namespace: str) -> render.RenderedSubmission:
    conf = render.prepare(
        {
            "spark.master": "k8s://https://127.0.0.1",
            "spark.app.name": "faulty",
            "spark.kubernetes.namespace": namespace,
            "spark.kubernetes.container.image": "apache/spark:4.0.0",
            "spark.kubernetes.driver.annotation.kwok.sparkk8s.io/hold": "true",
        },
        main_app_resource=MainAppResource("java", "local:///opt/app.jar"),
        main_class="org.apache.spark.examples.SparkPi",
        local=LocalInputs(spark_user="faults"),
        ids=naming.new_submission_ids(),
    )
    return render.render(conf)


@contextlib.contextmanager
def toxics(proxy: Any, *specs: tuple[str, str, dict[str, Any]]) -> Iterator[None]:
    names = [proxy.add_toxic(kind, stream=stream, **attrs) for kind, stream, attrs in specs]
    try:
        yield
    finally:
        for name in names:
            proxy.remove_toxic(name)


@contextlib.contextmanager
def throttled(kube_admin: Any) -> Iterator[None]:
    """Our identity's requests go to a priority level with no seats of its own and none to
    borrow (testenv/harness/apf.py): kube-apiserver refuses them with 429 and Retry-After,
    which the client honours, and the test checks the refusals in the server's metrics. A
    client of the same identity kept busy beside it, as before, added no refusal the metric
    needed and spun both cores: 170 CPU-s of the test's 105 s, now 13 CPU-s in 22 s."""
    throttle_user(kube_admin, STATIC_TOKEN_USER)
    try:
        yield
    finally:
        unthrottle(kube_admin)


def rejected_429s(control_plane: Any) -> int:
    return sum(
        int(float(line.rsplit(" ", 1)[1]))
        for line in control_plane.metrics_text().splitlines()
        if line.startswith("apiserver_flowcontrol_rejected_requests_total{")
        and 'flow_schema="sparkk8s-throttled"' in line
    )


def test_200_submissions_through_faults_leave_no_duplicate_and_no_orphan(
    control_plane, namespace, kube_admin, api_proxy
):
    grant(kube_admin, namespace, STATIC_TOKEN_USER, SUBMITTER, "spark-submitter")
    settings = ClientSettings(
        server=api_proxy.url, ca_file=str(control_plane.ca_file), token=control_plane.static_token
    )
    outcomes: dict[str, str] = {}  # app id -> "ok" or the error's message
    lock = threading.Lock()

    def one(client: KubeClient) -> None:
        submission = rendered(namespace)
        try:
            submit(client, submission)
            result = "ok"
        except SparkK8sError as error:
            result = f"{type(error).__name__}: {error}"
        with lock:
            outcomes[submission.app_id] = result

    phases = {
        # Each connection closes after 40 KB from the server: answers end mid-way, some of
        # them the pod POST's, whose pod exists although the client never heard so.
        "answers cut": lambda: toxics(api_proxy, ("limit_data", "downstream", {"bytes": 40000})),
        # A third of the connections is reset (RST) as the server first answers.
        "resets": lambda: toxics(
            api_proxy, ("reset_peer", "downstream", {"timeout": 0, "toxicity": 0.33})
        ),
        "429s": lambda: throttled(kube_admin),
        "latency": lambda: toxics(
            api_proxy,
            ("latency", "downstream", {"latency": 100, "jitter": 50}),
            ("latency", "upstream", {"latency": 100, "jitter": 50}),
        ),
    }
    rejected_before = rejected_429s(control_plane)
    by_phase: dict[str, Counter] = {}
    with KubeClient(settings) as client:
        for phase, fault in phases.items():
            before = set(outcomes)
            with fault(), ThreadPoolExecutor(THREADS) as pool:
                list(pool.map(lambda _: one(client), range(PER_PHASE[phase])))
            by_phase[phase] = Counter(
                "ok" if outcomes[a] == "ok" else "failed" for a in set(outcomes) - before
            )
            failures = [outcomes[a] for a in set(outcomes) - before if outcomes[a] != "ok"]
            print(phase, by_phase[phase], time.strftime("%X"), failures[:3], flush=True)
    print(by_phase)
    assert rejected_429s(control_plane) > rejected_before, "the 429 phase refused nothing"
    assert len(outcomes) == sum(PER_PHASE.values()) == 200

    def listed(path: str) -> list[dict]:
        return request(kube_admin, "GET", path).get("items") or []

    pods = listed(f"/api/v1/namespaces/{namespace}/pods")
    drivers = Counter(p["metadata"]["labels"].get("spark-app-selector") for p in pods)
    assert [app for app, n in drivers.items() if n > 1] == [], "an application has two drivers"
    succeeded = {app for app, outcome in outcomes.items() if outcome == "ok"}
    assert set(drivers) == succeeded, {
        "driver without a successful submission": sorted(set(drivers) - succeeded)[:5],
        "successful submission without a driver": sorted(succeeded - set(drivers))[:5],
    }
    live_uids = {p["metadata"]["uid"] for p in pods}
    orphans = []
    for path in (
        f"/api/v1/namespaces/{namespace}/configmaps",
        f"/api/v1/namespaces/{namespace}/services",
        f"/apis/networking.k8s.io/v1/namespaces/{namespace}/networkpolicies",
    ):
        for obj in listed(path):
            if obj["metadata"]["name"] == "kube-root-ca.crt":
                continue  # the namespace's own
            owners = {o["uid"] for o in obj["metadata"].get("ownerReferences") or []}
            if not owners & live_uids:
                orphans.append(f"{path.rsplit('/', 1)[1]}/{obj['metadata']['name']}")
    assert orphans == [], orphans[:5]
    for app, outcome in outcomes.items():
        if outcome != "ok":  # a clear error names what and where, never a bare exception
            assert namespace in outcome or "127.0.0.1" in outcome, (app, outcome)
    assert len(succeeded) >= 0.9 * len(outcomes), Counter(
        o.split(":")[0] for o in outcomes.values()
    )
