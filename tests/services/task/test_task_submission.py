"""One task instance's submission (services/task/task_submission.py): each number's conf, and the
adoption of a live driver. The race and the waits run through the operator's flow in
tests/operators/test_operator_flow.py and against the real API server in
test_operator_controlplane.py."""

from __future__ import annotations

import logging

from airflow_provider_sparkk8s.application.task.spark_submit_args import SubmitParameters
from airflow_provider_sparkk8s.application.task.task_identity import TaskInstanceRef
from airflow_provider_sparkk8s.services.task.task_prepare import RunRequest, prepare
from airflow_provider_sparkk8s.services.task.task_submission import (
    DEFAULT_GRACE_SECONDS,
    _grace_seconds,
    adopt,
)

LOG = logging.getLogger("sparkk8s.test.task_submission")
REF = TaskInstanceRef("etl", "spark_pi", "manual__1")


def test_each_submission_number_names_its_own_driver_pod():
    parameters = SubmitParameters(application="local:///app.py", name="spark_pi")
    request = RunRequest(parameters, "k8s://https://127.0.0.1:6443", "team-a", "/", {},
                         image="apache/spark:4.0.1")  # fmt: skip
    task = prepare(request, REF, LOG)
    first, second = task.plan(1), task.plan(2)
    assert first.rendered.driver_pod_name != second.rendered.driver_pod_name
    assert first.rendered.namespace == second.rendered.namespace == "team-a"


def test_the_grace_period_is_the_deletions_else_the_specs_else_kubernetes():
    assert _grace_seconds({"metadata": {"deletionGracePeriodSeconds": 5}}) == 5
    assert _grace_seconds({"spec": {"terminationGracePeriodSeconds": 90}}) == 90
    assert _grace_seconds({}) == DEFAULT_GRACE_SECONDS


def test_an_adopted_driver_is_followed_as_it_is(caplog):
    caplog.set_level(logging.INFO, LOG.name)
    pod = {
        "metadata": {"name": "pi-1-driver", "namespace": "team-a",
                     "creationTimestamp": "2026-11-29T18:00:00Z",
                     "labels": {"spark-app-selector": "spark-abc"}},
        "spec": {"containers": [{"name": "spark-kubernetes-driver"}]},
    }  # fmt: skip
    app = adopt(pod, "running", LOG)
    assert app.adopted and app.submission_id == "team-a:pi-1-driver"
    assert "Adopting driver pod team-a:pi-1-driver of application spark-abc (running)" in (
        caplog.text
    )
