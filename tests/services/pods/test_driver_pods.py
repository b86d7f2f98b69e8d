"""The driver-pods service: its watch loop on a scripted client, kill/status on a recording
API server, and the one pod body the operator and the CLI now both send."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from airflow_provider_sparkk8s.application.task.task_identity import TASK_INSTANCE_ANNOTATION
from airflow_provider_sparkk8s.cli import submit as cli
from airflow_provider_sparkk8s.errors import KubeApiError, KubeConfigError, SparkConfError
from airflow_provider_sparkk8s.kube.settings import ClientSettings
from airflow_provider_sparkk8s.kube.sync_client import KubeClient, RetryPolicy
from airflow_provider_sparkk8s.services.pods.driver_pods import (
    DriverPods,
    FollowedPods,
    split_submission_id,
)
from airflow_provider_sparkk8s.services.submit.send import submit
from testenv.harness.recorder import RecordingServer
from tests.services.submit.test_send_sequence import NAMESPACE, rendered_submission


def pod(name: str, version: str, phase: str = "Running") -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": version}, "status": {"phase": phase}}


class ScriptedClient:
    """A list answer, then one scripted list of events per watch call."""

    def __init__(self, listings: list[dict[str, Any]], windows: list[list[dict[str, Any]]]):
        self.listings = listings
        self.windows = windows
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.closed_streams = 0

    def request(self, method: str, path: str, params: Any = None, **_: Any) -> dict[str, Any]:
        self.calls.append(("list", dict(params or {})))
        return self.listings.pop(0)

    def watch(
        self, path: str, params: Any = None, *, read_timeout: float | None = None
    ) -> Iterator[dict[str, Any]]:
        self.calls.append(("watch", dict(params or {})))
        events = self.windows.pop(0)
        try:
            yield from events
        finally:
            self.closed_streams += 1


def names(pods: tuple[Mapping[str, Any], ...]) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


def test_follow_lists_then_watches_resumes_after_a_window_and_lists_again_after_410() -> None:
    client = ScriptedClient(
        listings=[
            {"metadata": {"resourceVersion": "10"}, "items": [pod("driver", "9")]},
            {"metadata": {"resourceVersion": "30"}, "items": [pod("driver", "29")]},
        ],
        windows=[
            [
                {"type": "ADDED", "object": pod("exec-1", "11")},
                {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "12"}}},
            ],
            [
                {"type": "DELETED", "object": pod("exec-1", "13")},
                {"type": "ERROR", "object": {"code": 410, "reason": "Expired"}},
            ],
            [{"type": "MODIFIED", "object": pod("driver", "31", "Succeeded")}],
        ],
    )
    seen, gone = [], []
    for pods, last in DriverPods(client).follow("ns", label_selector="spark-app-selector=a"):  # type: ignore[arg-type]
        seen.append(names(pods))
        gone.append(names(last))
        if pods and pods[0]["status"]["phase"] == "Succeeded":
            break
    assert seen == [
        ["driver"],  # the list
        ["driver", "exec-1"],  # ADDED
        ["driver", "exec-1"],  # the window ended (the bookmark itself yields nothing)
        ["driver"],  # DELETED; then 410: list again
        ["driver"],  # the new list
        ["driver"],  # MODIFIED: succeeded
    ]
    # The deletion's look carries the pod's last version: it may be the first to show its end.
    assert gone == [[], [], [], ["exec-1"], [], []]
    watches = [params for kind, params in client.calls if kind == "watch"]
    assert [w["resourceVersion"] for w in watches] == ["10", "12", "30"]
    assert all(w["labelSelector"] == "spark-app-selector=a" for w in watches)
    assert [kind for kind, _ in client.calls] == ["list", "watch", "watch", "list", "watch"]
    assert client.closed_streams == 3  # the last one closed by the caller's break


def test_catch_up_hands_every_version_since_the_last_call_and_lists_again_after_410() -> None:
    client = ScriptedClient(
        listings=[
            {"metadata": {"resourceVersion": "10"}, "items": [pod("driver", "9")]},
            {"metadata": {"resourceVersion": "30"}, "items": [pod("driver", "29")]},
        ],
        windows=[
            [{"type": "ADDED", "object": pod("exec-1", "11")}],
            [
                {"type": "MODIFIED", "object": pod("exec-1", "12", "Failed")},
                {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "13"}}},
                {"type": "DELETED", "object": pod("exec-1", "14", "Failed")},
            ],
            [{"type": "ERROR", "object": {"code": 410, "reason": "Expired"}}],
            [{"type": "MODIFIED", "object": pod("driver", "31", "Succeeded")}],
        ],
    )
    service = DriverPods(client)  # type: ignore[arg-type]
    followed = FollowedPods("ns", "spark-app-selector=a")

    def phases(versions: list[Mapping[str, Any]]) -> list[tuple[str, str]]:
        return [(v["metadata"]["name"], v["status"]["phase"]) for v in versions]

    # The list, then what changed since it.
    assert phases(service.catch_up(followed)) == [("driver", "Running"), ("exec-1", "Running")]
    # Every version since, even of a pod already gone; the pods as they are now.
    assert phases(service.catch_up(followed)) == [("exec-1", "Failed"), ("exec-1", "Failed")]
    assert list(followed.pods) == ["driver"]
    # Too old to resume: a list, then what changed since it.
    assert phases(service.catch_up(followed)) == [("driver", "Running"), ("driver", "Succeeded")]
    watches = [params for kind, params in client.calls if kind == "watch"]
    assert [w["resourceVersion"] for w in watches] == ["10", "11", "14", "30"]
    assert [w["timeoutSeconds"] for w in watches] == ["1"] * 4
    assert [kind for kind, _ in client.calls] == [
        "list",
        "watch",
        "watch",
        "watch",
        "list",
        "watch",
    ]
    assert followed.stats.gone == 1


def test_watch_driver_ends_with_none_once_the_pod_is_gone() -> None:
    client = ScriptedClient(
        listings=[{"metadata": {"resourceVersion": "1"}, "items": [pod("d", "1")]}],
        windows=[[{"type": "DELETED", "object": pod("d", "2")}]],
    )
    assert list(DriverPods(client).watch_driver("ns", "d")) == [pod("d", "1"), None]  # type: ignore[arg-type]
    assert client.calls[0] == ("list", {"fieldSelector": "metadata.name=d"})


def test_paths_refuse_names_that_would_change_the_url() -> None:
    pods = DriverPods(ScriptedClient([], []))  # type: ignore[arg-type]
    with pytest.raises(SparkConfError, match=r"metadata\.name"):
        pods.get("ns", "../secrets/x")


def test_submission_ids_default_to_the_given_namespace() -> None:
    assert split_submission_id("team-a:pi-*", "default") == ("team-a", "pi-*")
    assert split_submission_id("pi-1", "default") == ("default", "pi-1")
    assert split_submission_id(":pi-1", "default") == ("default", "pi-1")


@pytest.fixture
def server():
    with RecordingServer() as recorder:
        yield recorder


@pytest.fixture
def client(server: RecordingServer):
    with KubeClient(ClientSettings(server=server.url), RetryPolicy(attempts=1)) as kube:
        yield kube


def test_kill_and_status_with_globs(server: RecordingServer, client: KubeClient) -> None:
    pods = DriverPods(client)
    names = []
    for _ in range(2):
        rendered = rendered_submission(pre_resource=False)
        submit(client, rendered)
        names.append(rendered.driver_pod_name)
    # The recorder lists nothing, so globs are checked through exact names here;
    # glob matching over a real listing is covered against the control plane.
    assert [p["metadata"]["name"] for p in pods.find(f"{NAMESPACE}:{names[0]}", "x")] == [names[0]]
    assert pods.kill(f"{NAMESPACE}:{names[0]}", "default") == [f"{NAMESPACE}:{names[0]}"]
    assert pods.find(f"{NAMESPACE}:{names[0]}", "default") == []
    assert pods.kill(names[1], NAMESPACE) == [f"{NAMESPACE}:{names[1]}"]


# ----------------------------------------------------------------------- one pod body


class RecorderHook:
    def __init__(self, url: str):
        self.url = url

    def get_client(self) -> KubeClient:
        return KubeClient(ClientSettings(server=self.url), RetryPolicy(attempts=1))

    def get_namespace(self) -> str:
        return NAMESPACE

    def get_connection(self, conn_id: str) -> Any:
        return SimpleNamespace(extra_dejson={})  # no policy, no link templates


def posted_pod(server: RecordingServer) -> dict[str, Any]:
    (body,) = [
        r["body"]
        for r in server.recording.as_list()
        if r["method"] == "POST" and r["path"].endswith("/pods")
    ]
    return body


def operator_pod_body(server: RecordingServer, monkeypatch: Any, template: str | None) -> dict:
    from airflow.sdk.exceptions import TaskDeferred

    from airflow_provider_sparkk8s.operators.spark_k8s import SparkK8sSubmitOperator
    from testenv.fakes import FakeTaskInstance

    monkeypatch.setattr(SparkK8sSubmitOperator, "_hook", lambda self: RecorderHook(server.url))
    operator = SparkK8sSubmitOperator(
        task_id="pi",
        application="local:///opt/app.jar",
        java_class="com.example.Main",
        image="apache/spark:4.0.1",
        namespace=NAMESPACE,
        driver_pod_template=template,
        deferrable=True,
    )
    with pytest.raises(TaskDeferred):
        operator.execute({"ti": FakeTaskInstance()})
    return posted_pod(server)


def cli_pod_body(server: RecordingServer, template: str | None) -> dict:
    argv = [
        "--master", "k8s://http://127.0.0.1:1", "--deploy-mode", "cluster", "--class",
        "com.example.Main", "--conf", f"spark.kubernetes.namespace={NAMESPACE}",
        "--conf", "spark.kubernetes.container.image=apache/spark:4.0.1",
        "--conf", "spark.kubernetes.submission.waitAppCompletion=false",
    ]  # fmt: skip
    if template:
        argv += ["--conf", f"spark.kubernetes.driver.podTemplateFile={template}"]
    outcome = cli.run(
        [*argv, "local:///opt/app.jar"],
        environ={},
        out=io.StringIO(),
        err=io.StringIO(),
        client_factory=lambda conf, env: KubeClient(ClientSettings(server=server.url)),
    )
    assert outcome.exit_code == cli.EXIT_OK
    return posted_pod(server)


@pytest.mark.parametrize("template_namespace", [None, "elsewhere"])
def test_the_operator_and_the_cli_post_the_same_pod_body(
    server: RecordingServer, monkeypatch: Any, tmp_path: Path, template_namespace: str | None
) -> None:
    """spark-submit names the namespace in the POST body only when the driver template did
    (fabric8 rewrites it to the target's); the operator used to drop it always."""
    metadata = {"namespace": template_namespace} if template_namespace else {}
    template = tmp_path / "driver.yaml"
    template.write_text(
        f"apiVersion: v1\nkind: Pod\nmetadata: {metadata}\nspec:\n  containers: [{{name: c}}]\n"
    )
    from_operator = operator_pod_body(server, monkeypatch, str(template))
    server.reset()
    from_cli = cli_pod_body(server, str(template))
    expected = NAMESPACE if template_namespace else None
    assert from_operator["metadata"].get("namespace") == expected
    assert from_cli["metadata"].get("namespace") == expected
    # The operator adds its task identity (labels and one annotation); nothing else differs.
    annotations = from_operator["metadata"].pop("annotations")
    assert annotations == {TASK_INSTANCE_ANNOTATION: annotations[TASK_INSTANCE_ANNOTATION]}
    assert set(from_operator["metadata"]) - {"labels"} == set(from_cli["metadata"]) - {"labels"}


def test_driver_properties_come_from_the_conf_config_map_the_pod_mounts() -> None:
    from airflow_provider_sparkk8s.submission.properties import CONF_VOLUME

    class ConfigMaps:
        def __init__(self) -> None:
            self.paths: list[str] = []

        def request(self, method: str, path: str, **_: Any) -> dict[str, Any]:
            self.paths.append(path)
            return {"data": {"spark.properties": "spark.app.name=pi\nspark.jars=a.jar\n"}}

    client = ConfigMaps()
    pods = DriverPods(client)  # type: ignore[arg-type]
    volume = {"name": CONF_VOLUME, "configMap": {"name": "spark-drv-1-conf-map"}}
    mounted = {"metadata": {"name": "d", "namespace": "ns"}, "spec": {"volumes": [volume]}}
    assert pods.driver_properties(mounted) == {"spark.app.name": "pi", "spark.jars": "a.jar"}
    assert client.paths == ["/api/v1/namespaces/ns/configmaps/spark-drv-1-conf-map"]
    assert pods.driver_properties({"metadata": {"name": "d", "namespace": "ns"}}) is None


class KueueClient:
    """Answers by path: a Workload, a LocalQueue, or an error; records the paths asked."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers
        self.paths: list[str] = []

    def request(self, method: str, path: str, **_: Any) -> dict[str, Any]:
        self.paths.append(path)
        answer = self.answers[path]
        if isinstance(answer, Exception):
            raise answer
        return dict(answer)


WORKLOAD_PATH = "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/spark-1"
LOCAL_QUEUE_PATH = "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/localqueues/team-queue"
PENDING = {
    "spec": {"queueName": "team-queue"},
    "status": {
        "conditions": [
            {"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": "full"}
        ]
    },
}


def test_queue_view_reads_the_workload_then_its_local_queue_once() -> None:
    client = KueueClient(
        {WORKLOAD_PATH: PENDING, LOCAL_QUEUE_PATH: {"spec": {"clusterQueue": "cq"}}}
    )
    service = DriverPods(client)  # type: ignore[arg-type]
    view = service.queue_view("ns", "spark-1", None)
    assert view is not None and view.status == "queued in ClusterQueue cq: full"
    assert client.paths == [WORKLOAD_PATH, LOCAL_QUEUE_PATH]
    # The ClusterQueue known: the Workload alone.
    assert service.queue_view("ns", "spark-1", "cq") == view
    assert client.paths == [WORKLOAD_PATH, LOCAL_QUEUE_PATH, WORKLOAD_PATH]


def test_queue_view_without_a_workload_or_a_permission(caplog: pytest.LogCaptureFixture) -> None:
    gone = KubeApiError(404, "NotFound", "not found", method="GET", path=WORKLOAD_PATH)
    view = DriverPods(KueueClient({WORKLOAD_PATH: gone})).queue_view("ns", "spark-1", "cq")  # type: ignore[arg-type]
    assert view is not None and not view.found  # nothing more to read
    refused = KubeApiError(403, "Forbidden", "no get on workloads", method="GET", path="")
    refused_path = WORKLOAD_PATH.replace("spark-1", "spark-403")
    service = DriverPods(KueueClient({refused_path: refused}))  # type: ignore[arg-type]
    with caplog.at_level(
        logging.WARNING, logger="airflow_provider_sparkk8s.services.pods.driver_pods"
    ):
        assert service.queue_view("ns", "spark-403", None) is None  # the follower keeps its view
        assert service.queue_view("ns", "spark-403", None) is None
    warned = [r.getMessage() for r in caplog.records if "spark-403" in r.getMessage()]
    assert len(warned) == 1 and "403" in warned[0], warned  # said once, with the status
    # An exec plugin's credential failure is not the follow's end either.
    broken = KueueClient({WORKLOAD_PATH: KubeConfigError("exec plugin timed out")})
    assert DriverPods(broken).queue_view("ns", "spark-1", None) is None  # type: ignore[arg-type]
    # The LocalQueue refused: the sentence names the LocalQueue instead.
    partly = KueueClient({WORKLOAD_PATH: PENDING, LOCAL_QUEUE_PATH: refused})
    with caplog.at_level(
        logging.WARNING, logger="airflow_provider_sparkk8s.services.pods.driver_pods"
    ):
        view = DriverPods(partly).queue_view("ns", "spark-1", None)  # type: ignore[arg-type]
        DriverPods(partly).queue_view("ns", "spark-1", None)  # type: ignore[arg-type]
    assert view is not None and view.status == "queued in LocalQueue team-queue: full"
    # ... and says once why (a 403: the Role lacks get on localqueues).
    local = [r.getMessage() for r in caplog.records if "LocalQueue ns/team-queue" in r.getMessage()]
    assert len(local) == 1 and "no get on workloads" in local[0], local
