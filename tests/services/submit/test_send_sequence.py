"""submit.py against a recording API endpoint: order, owner references, rollback, 409, 403."""

from __future__ import annotations

import re
from typing import Any

import pytest

from airflow_provider_sparkk8s.errors import SubmissionError
from airflow_provider_sparkk8s.kube.retries import RetryPolicy
from airflow_provider_sparkk8s.kube.settings import ClientSettings
from airflow_provider_sparkk8s.kube.sync_client import KubeClient
from airflow_provider_sparkk8s.services.submit.send import FIELD_MANAGER, submit
from airflow_provider_sparkk8s.submission import naming, render
from airflow_provider_sparkk8s.submission.conf import MainAppResource
from airflow_provider_sparkk8s.submission.spec import SparkPod, StepResult
from testenv.harness.recorder import InjectedFailure, RecordingServer

NAMESPACE = "team-a"


def pod_group_step(conf: Any, pod: SparkPod) -> StepResult:
    """A user step with a pre-resource, like Spark's VolcanoFeatureStep."""
    group = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": f"{conf.app_id}-podgroup", "namespace": conf.namespace},
        "spec": {"minMember": 1},
    }
    return StepResult(pod=pod, pre_resources=[group])


def rendered_submission(*, pre_resource: bool = True) -> render.RenderedSubmission:
    conf = {
        "spark.master": "k8s://http://127.0.0.1:1",
        "spark.app.name": "seq",
        "spark.kubernetes.namespace": NAMESPACE,
        "spark.kubernetes.container.image": "apache/spark:4.0.0",
        "spark.kubernetes.hadoop.configMapName": "hadoop-conf",
        "spark.kubernetes.executor.podTemplateFile": "/tmp/exec.yaml",
    }
    if pre_resource:
        conf["spark.kubernetes.driver.pod.featureSteps"] = f"{__name__}:pod_group_step"
    from airflow_provider_sparkk8s.submission.conf import LocalInputs

    local = LocalInputs(files={"/tmp/exec.yaml": b"apiVersion: v1\nkind: Pod\n"})
    driver_conf = render.prepare(
        conf,
        main_app_resource=MainAppResource("java", "local:///opt/app.jar"),
        main_class="com.example.Main",
        local=local,
        ids=naming.new_submission_ids(),
    )
    return render.render(driver_conf)


@pytest.fixture
def server():
    with RecordingServer() as recorder:
        yield recorder


@pytest.fixture
def client(server: RecordingServer):
    settings = ClientSettings(server=server.url)
    with KubeClient(settings, RetryPolicy(attempts=1)) as kube:
        yield kube


def kinds_and_verbs(server: RecordingServer) -> list[str]:
    out = []
    for request in server.recording.as_list():
        body = request["body"] or {}
        name = request["path"].rsplit("/", 1)[-1]
        kind = body.get("kind") if isinstance(body, dict) else None
        out.append(f"{request['method']} {kind or name}")
    return out


def test_sequence_is_sparks(server: RecordingServer, client: KubeClient) -> None:
    rendered = rendered_submission()
    result = submit(client, rendered)
    requests = server.recording.as_list()
    assert kinds_and_verbs(server) == [
        "PATCH PodGroup",  # pre-resource, before the pod
        "POST Pod",
        "PATCH PodGroup",  # re-applied, now owned by the pod
        "PATCH Service",
        "PATCH NetworkPolicy",
        "PATCH ConfigMap",  # executor pod template
        "PATCH ConfigMap",  # spark.properties, last
    ]
    pod_uid = server.recording.objects[
        f"/api/v1/namespaces/{NAMESPACE}/pods/{rendered.driver_pod_name}"
    ]["metadata"]["uid"]
    assert result.driver_pod_uid == pod_uid
    assert requests[0]["body"]["metadata"].get("ownerReferences") is None
    for request in requests[2:]:
        assert request["query"] == {"fieldManager": [FIELD_MANAGER], "force": ["true"]}
        assert request["content_type"] == "application/apply-patch+yaml"
        assert request["body"]["metadata"]["ownerReferences"] == [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": rendered.driver_pod_name,
                "uid": pod_uid,
                "controller": True,
            }
        ]
    assert requests[-1]["path"].endswith(f"/configmaps/{rendered.conf_map_name}")
    assert result.submission_id == f"{NAMESPACE}:{rendered.driver_pod_name}"
    assert result.created[1] == f"Pod/{rendered.driver_pod_name}"
    assert len(result.created) == 6  # the PodGroup once, plus the pod and four post-resources


# (method, which matching request fails, objects that must have been created before it)
FAILURE_POINTS = [
    ("PATCH", r"/podgroups/", 1, "PodGroup"),
    ("POST", r"/pods$", 1, "Pod"),
    ("PATCH", r"/podgroups/", 2, "PodGroup"),
    ("PATCH", r"/services/", 1, "Service"),
    ("PATCH", r"/networkpolicies/", 1, "NetworkPolicy"),
    ("PATCH", r"/configmaps/", 1, "ConfigMap"),
    ("PATCH", r"/configmaps/", 2, "ConfigMap"),
]


@pytest.mark.parametrize(("method", "pattern", "nth", "kind"), FAILURE_POINTS)
def test_failure_at_each_step_leaves_nothing(
    server: RecordingServer, client: KubeClient, method: str, pattern: str, nth: int, kind: str
) -> None:
    rendered = rendered_submission()
    server.fail(InjectedFailure(method, pattern, 422, "Invalid", "spec is broken", nth=nth))
    with pytest.raises(SubmissionError) as raised:
        submit(client, rendered)
    message = str(raised.value)
    assert f"{kind}/" in message and "422 Invalid: spec is broken" in message
    assert server.recording.objects == {}, "rollback left objects behind"
    deletes = [r for r in server.recording.as_list() if r["method"] == "DELETE"]
    created = [r for r in server.recording.as_list() if r["method"] in ("POST", "PATCH")][
        :-1
    ]  # the last one failed
    assert len(deletes) == len(
        {r["path"].split("?")[0] for r in created if r["method"] == "PATCH"}
        | {r["path"] for r in created if r["method"] == "POST"}
    )


def test_the_same_submission_sent_again_adopts_its_pod_instead_of_a_second_one(
    server: RecordingServer, client: KubeClient
) -> None:
    rendered = rendered_submission(pre_resource=False)
    first = submit(client, rendered)
    pod_path = f"/api/v1/namespaces/{NAMESPACE}/pods/{rendered.driver_pod_name}"
    server.recording.requests.clear()
    again = submit(client, rendered)  # the same application id: its 409 is its own pod
    assert again.driver_pod_uid == first.driver_pod_uid
    assert server.recording.objects[pod_path]["metadata"]["uid"] == first.driver_pod_uid
    assert [r["method"] for r in server.recording.as_list()][:2] == ["POST", "GET"]


def test_403_names_the_missing_permission(server: RecordingServer, client: KubeClient) -> None:
    rendered = rendered_submission(pre_resource=False)
    server.fail(
        InjectedFailure("PATCH", r"/networkpolicies/", 403, "Forbidden", "forbidden: no rbac")
    )
    with pytest.raises(SubmissionError) as raised:
        submit(client, rendered)
    message = str(raised.value)
    assert re.search(r"patch networkpolicies\.networking\.k8s\.io in namespace 'team-a'", message)
    assert "rolled back: " in message and "Pod/" in message
    assert server.recording.objects == {}


def test_a_roll_back_refused_names_the_permission_it_lacks(
    server: RecordingServer, client: KubeClient
) -> None:
    rendered = rendered_submission(pre_resource=False)
    server.fail(InjectedFailure("PATCH", r"/configmaps/", 422, "Invalid", "spec is broken"))
    refusal = (
        'services "s" is forbidden: User "system:serviceaccount:team-a:airflow" cannot delete '
        'resource "services" in API group "" in the namespace "team-a"'
    )
    server.fail(InjectedFailure("DELETE", r"/services/", 403, "Forbidden", refusal))
    with pytest.raises(SubmissionError) as raised:
        submit(client, rendered)
    message = str(raised.value)
    assert re.search(
        r"could NOT remove: Service/\S+ \(403 Forbidden: missing permission to delete "
        r"services in namespace 'team-a'\)",
        message,
    ), message


def pod_posts(server: RecordingServer) -> int:
    return sum(
        1
        for r in server.recording.as_list()
        if r["method"] == "POST" and r["path"].endswith("/pods")
    )


def test_a_post_whose_answer_was_lost_is_sent_again_and_its_409_adopted(
    server: RecordingServer, client: KubeClient
) -> None:
    rendered = rendered_submission(pre_resource=False)
    # The API server created the pod, but the answer was a 504 (as when etcd is slow).
    server.fail(
        InjectedFailure("POST", r"/pods$", 504, "Timeout", "request timed out", applied=True)
    )
    result = submit(client, rendered)
    assert pod_posts(server) == 2  # the second POST met the first one's pod: 409, adopted
    pods = [k for k in server.recording.objects if "/pods/" in k]
    assert pods == [f"/api/v1/namespaces/{NAMESPACE}/pods/{rendered.driver_pod_name}"]
    assert result.driver_pod_uid == server.recording.objects[pods[0]]["metadata"]["uid"]


def test_a_5xx_that_did_not_apply_is_sent_again_and_creates_the_pod_once(
    server: RecordingServer, client: KubeClient
) -> None:
    rendered = rendered_submission(pre_resource=False)
    server.fail(InjectedFailure("POST", r"/pods$", 503, "ServiceUnavailable", "try later"))
    submit(client, rendered)
    assert pod_posts(server) == 2
    assert sum(1 for k in server.recording.objects if "/pods/" in k) == 1


def test_a_409_on_another_applications_pod_is_reported_and_the_pod_untouched(
    server: RecordingServer, client: KubeClient
) -> None:
    rendered = rendered_submission(pre_resource=False)
    other = dict(rendered.driver_pod)
    other["metadata"] = {**other["metadata"], "labels": {"spark-app-selector": "spark-other"}}
    server.respond("POST", f"/api/v1/namespaces/{NAMESPACE}/pods", other)
    server.fail(InjectedFailure("POST", r"/pods$", 503, "ServiceUnavailable", "try later"))
    with pytest.raises(SubmissionError, match=r"409 AlreadyExists.*left untouched"):
        submit(client, rendered)
    remaining = server.recording.objects[
        f"/api/v1/namespaces/{NAMESPACE}/pods/{rendered.driver_pod_name}"
    ]
    assert remaining["metadata"]["labels"] == {"spark-app-selector": "spark-other"}  # untouched


def test_giving_up_on_lost_answers_removes_the_pod_the_first_post_made(
    server: RecordingServer, client: KubeClient
) -> None:
    rendered = rendered_submission(pre_resource=False)
    server.fail(InjectedFailure("POST", r"/pods$", 504, "Timeout", "timed out", applied=True))
    for _ in range(3):  # every later send fails too (each failure counts from its own start)
        server.fail(InjectedFailure("POST", r"/pods$", 500, "InternalError", "etcd"))
    with pytest.raises(SubmissionError) as raised:
        submit(client, rendered)
    assert "500 InternalError" in str(raised.value)
    assert server.recording.objects == {}, "the pod of the lost answer was left behind"
