"""SparkK8sSubmitTrigger with its blocking phases and its follower faked: the kwargs, the
rendering, which event ends the task, and the kill."""

from __future__ import annotations

import asyncio
import threading
import types
from collections.abc import AsyncIterator
from typing import Any

import pytest

from airflow_provider_sparkk8s.application.following.tracked import TrackedApplication
from airflow_provider_sparkk8s.application.task.task_end import TaskEnd, Tries
from airflow_provider_sparkk8s.errors import KubeApiError, SparkConfError
from airflow_provider_sparkk8s.operators.spark_k8s import SparkK8sSubmitOperator
from airflow_provider_sparkk8s.triggers.spark_k8s import SparkK8sApplicationTrigger
from airflow_provider_sparkk8s.triggers.spark_k8s_submit import SparkK8sSubmitTrigger
from airflow_provider_sparkk8s.triggers.submit_run import Started
from airflow_provider_sparkk8s.version_compat import (
    TaskFailedEvent,
    TaskSuccessEvent,
    TriggerEvent,
)
from testenv.fakes import FakeTaskInstance

APP = TrackedApplication("spark-1", "team-a", "d-1-driver", "spark-kubernetes-driver", "2026-11-29T18:00:00Z")  # fmt: skip
SUCCESS = TaskEnd(True, {"return_value": {"status": "success"}, "spark_application": {}})


def operator(**overrides: Any) -> SparkK8sSubmitOperator:
    params: dict[str, Any] = {
        "task_id": "spark_pi",
        "application": "s3a://jobs/etl.py",
        "image": "apache/spark:4.0.1",
        "conf": {"spark.app.day": "{{ ds }}", "spark.x": "s3a://b/conf.json"},
        "start_from_trigger": True,
        **overrides,
    }
    return SparkK8sSubmitOperator(**params)


def trigger_of(op: SparkK8sSubmitOperator) -> SparkK8sSubmitTrigger:
    assert op.start_trigger_args is not None
    return SparkK8sSubmitTrigger(**(op.start_trigger_args.trigger_kwargs or {}))


class FakeRun:
    def __init__(self, start: Any = None, end: TaskEnd = SUCCESS) -> None:
        self.start_result, self.end = start, end
        self.finished: list[dict[str, Any]] = []

    def start(self, ref: Any) -> Started:
        if isinstance(self.start_result, Exception):
            raise self.start_result
        return self.start_result or Started(APP, {})

    def finish(self, started: Started, final: Any, ref: Any, tries: Tries) -> TaskEnd:
        self.finished.append(dict(final, tries=tries))
        return self.end


@pytest.fixture
def followed(monkeypatch: pytest.MonkeyPatch) -> list[SparkK8sApplicationTrigger]:
    """The follower ends at once with a success; the followers made are listed."""
    made: list[SparkK8sApplicationTrigger] = []

    async def run(self: SparkK8sApplicationTrigger) -> AsyncIterator[TriggerEvent]:
        made.append(self)
        yield TriggerEvent({"status": "success", "application_id": self.application_id})

    monkeypatch.setattr(SparkK8sApplicationTrigger, "run", run)
    return made


def with_run(
    trigger: SparkK8sSubmitTrigger, fake: FakeRun, ti: Any = None
) -> SparkK8sSubmitTrigger:
    patched: Any = trigger  # a fake task run and task instance, as the triggerer's
    patched._submit_run = lambda runs: fake
    patched.task_instance = ti or FakeTaskInstance(try_number=1)
    patched.task_instance.max_tries = 2
    # The SDK's XCom, as the triggerer's task instance would store them: the fake records.
    patched.push_xcom = lambda ti, key, value: ti.xcom_push(key, value)
    return trigger


async def events(trigger: SparkK8sSubmitTrigger) -> list[Any]:
    return await asyncio.wait_for(_drain(trigger), 10)


async def _drain(trigger: SparkK8sSubmitTrigger) -> list[Any]:
    return [event async for event in trigger.run()]


def test_kwargs_round_trip_and_hold_no_secrets() -> None:
    op = operator()
    trigger = trigger_of(op)
    path, kwargs = trigger.serialize()
    assert path == "airflow_provider_sparkk8s.triggers.spark_k8s_submit.SparkK8sSubmitTrigger"
    assert SparkK8sSubmitTrigger(**kwargs).serialize() == (path, kwargs)
    assert kwargs["kubernetes_conn_id"] == "spark_k8s_default"  # a name, never its secrets
    with pytest.raises(TypeError, match="unknown parameters"):
        SparkK8sSubmitTrigger(**kwargs, token="x")


def test_the_trigger_imports_its_machinery_off_the_event_loop() -> None:
    """Airflow imports the class on the triggerer's loop: the module itself imports no hook,
    service or client (the pure core below it imports none by the layer rules); they come
    with `submit_run`, in a thread, at the first run."""
    import ast
    import inspect

    from airflow_provider_sparkk8s.triggers import spark_k8s_submit

    tree = ast.parse(inspect.getsource(spark_k8s_submit))
    top = [node.module or "" for node in tree.body if isinstance(node, ast.ImportFrom)]
    heavy = (".hooks", ".services", ".kube", ".triggers.submit_run")
    assert [name for name in top if any(part in name for part in heavy)] == []
    assert spark_k8s_submit.SUBMIT_RUN_MODULE == "airflow_provider_sparkk8s.triggers.submit_run"


def test_the_templated_fields_mirror_the_operators() -> None:
    op = operator()
    trigger = trigger_of(op)
    assert set(trigger.template_fields) == set(op.template_fields)
    assert set(op.template_fields) <= set(op.start_trigger_args.trigger_kwargs or {})  # type: ignore[union-attr]


def test_rendering_uses_the_context_and_keeps_remote_files_as_strings() -> None:
    trigger = trigger_of(operator())
    trigger.template_ext = (".yaml", ".yml", ".json")  # the task's, set by the triggerer
    ti = FakeTaskInstance()
    trigger.render_template_fields({"ds": "2026-12-07", "ti": ti})
    assert trigger.parameters()["conf"] == {
        "spark.app.day": "2026-12-07",
        "spark.x": "s3a://b/conf.json",
    }


async def test_a_success_ends_the_task_with_its_xcoms(followed: list[Any]) -> None:
    """Pushed through the task instance as a worker pushes them, not in the event (Airflow
    3.3.2 stores an event's XComs JSON-encoded twice)."""
    fake, ti = FakeRun(), FakeTaskInstance(try_number=1)
    (event,) = await events(with_run(trigger_of(operator()), fake, ti))
    assert isinstance(event, TaskSuccessEvent) and event.xcoms is None
    assert ti.xcom == SUCCESS.xcoms
    (follower,) = followed
    assert (follower.application_id, follower.driver_pod_name, follower.try_number) == (
        "spark-1",
        "d-1-driver",
        1,
    )
    assert follower.delete_on_kill is True
    # The task's following and upload settings, as the operator's deferral passes them.
    assert (follower.startup_timeout, follower.stream_logs, follower.upload_conn_id) == (
        600.0,
        True,
        None,
    )
    assert fake.finished == [
        {"status": "success", "application_id": "spark-1", "tries": Tries(True, True)}
    ]


async def test_a_failure_airflow_would_retry_and_must_not_goes_to_a_worker(
    followed: list[Any],
) -> None:
    end = TaskEnd(False, {"spark_application": {}}, in_worker=True, failure={"kind": "application_error", "message": "m"})  # fmt: skip
    (event,) = await events(with_run(trigger_of(operator()), FakeRun(end=end)))
    assert type(event) is TriggerEvent and event.payload == end.worker_payload()


async def test_a_retried_failure_ends_in_the_triggerer(followed: list[Any]) -> None:
    end = TaskEnd(False, {"spark_application": {"x": 1}}, failure={"kind": "infrastructure", "message": "m"})  # fmt: skip
    ti = FakeTaskInstance(try_number=1)
    (event,) = await events(with_run(trigger_of(operator()), FakeRun(end=end), ti))
    assert isinstance(event, TaskFailedEvent) and event.xcoms is None
    assert ti.xcom == {"spark_application": {"x": 1}}


async def test_a_refused_submission_is_invalid_input(followed: list[Any]) -> None:
    refusal = SparkConfError("application", "/dags/etl.py", "a remote URI")
    (event,) = await events(with_run(trigger_of(operator()), FakeRun(start=refusal)))
    assert type(event) is TriggerEvent  # tries are left: a worker fails it, not retried
    assert event.payload["failure"]["kind"] == "invalid_input"
    assert followed == []


async def test_an_api_failure_at_the_submission_is_retried(followed: list[Any]) -> None:
    error = KubeApiError(503, "ServiceUnavailable", "try later")
    (event,) = await events(with_run(trigger_of(operator()), FakeRun(start=error)))
    assert isinstance(event, TaskFailedEvent) and followed == []


async def test_an_earlier_tries_kept_result_is_delivered(followed: list[Any]) -> None:
    kept = Started(APP, {}, SUCCESS)
    (event,) = await events(with_run(trigger_of(operator()), FakeRun(start=kept)))
    assert isinstance(event, TaskSuccessEvent) and followed == []


async def test_a_kill_during_the_submission_waits_for_it_then_kills_as_the_follower(
    monkeypatch: pytest.MonkeyPatch, followed: list[Any]
) -> None:
    killed: list[str] = []

    async def on_kill(self: SparkK8sApplicationTrigger) -> None:
        killed.append(self.driver_pod_name or "")

    monkeypatch.setattr(SparkK8sApplicationTrigger, "on_kill", on_kill)
    submitting, release = threading.Event(), threading.Event()

    class SlowRun(FakeRun):
        def start(self, ref: Any) -> Started:
            submitting.set()
            release.wait(10)
            return super().start(ref)

    trigger = with_run(trigger_of(operator()), SlowRun())
    running = asyncio.ensure_future(_drain(trigger))
    await asyncio.to_thread(submitting.wait, 10)
    running.cancel()  # the triggerer cancels the trigger, then calls its on_kill
    asyncio.get_running_loop().call_later(0.05, release.set)
    await asyncio.wait_for(trigger.on_kill(), 10)
    assert killed == ["d-1-driver"]
    assert followed == []  # the cancelled run never followed


async def test_a_kill_outside_a_triggerer_deletes_nothing() -> None:
    await trigger_of(operator()).on_kill()  # no task instance: nothing to find


async def test_a_kill_before_the_trigger_adopted_finds_the_driver_by_its_labels(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An earlier triggerer submitted; this one was killed before it adopted the driver."""
    killed: list[str] = []

    async def on_kill(self: SparkK8sApplicationTrigger) -> None:
        killed.append(self.driver_pod_name or "")

    monkeypatch.setattr(SparkK8sApplicationTrigger, "on_kill", on_kill)

    class Found(FakeRun):
        def __init__(self, app: TrackedApplication | None) -> None:
            super().__init__()
            self.app = app

        def live_driver(self, ref: Any) -> TrackedApplication | None:
            return self.app

    await with_run(trigger_of(operator()), Found(APP)).on_kill()
    assert killed == ["d-1-driver"]
    await with_run(trigger_of(operator()), Found(None)).on_kill()
    assert killed == ["d-1-driver"]  # no live driver: nothing to kill


async def test_the_tries_come_from_the_tasks_retries_as_in_the_triggerer(
    followed: list[Any],
) -> None:
    """The triggerer's task instance carries the task (its `retries`) and max_tries 0."""
    ti = FakeTaskInstance(try_number=1)
    ti.task = types.SimpleNamespace(  # type: ignore[attr-defined]
        retries=0, template_ext=(), template_fields=(), start_trigger_args=None
    )
    fake = FakeRun()
    trigger = with_run(trigger_of(operator()), fake, ti)
    trigger.task_instance.max_tries = 0  # type: ignore[union-attr]
    await events(trigger)
    assert fake.finished[0]["tries"] == Tries(False, False)
    refusal = SparkConfError("application", "/dags/etl.py", "a remote URI")
    trigger = with_run(trigger_of(operator()), FakeRun(start=refusal), ti)
    trigger.task_instance.max_tries = 0  # type: ignore[union-attr]
    (event,) = await events(trigger)
    assert isinstance(event, TaskFailedEvent)  # no retries: the refusal ends here, final


def test_rendering_in_the_triggerer_where_the_dag_is_the_serialized_one() -> None:
    """The triggerer's task carries the serialized DAG, which has no Jinja environment of
    its own (seen on the real triggerer): Airflow's default environment renders."""
    op = operator()
    trigger = trigger_of(op)
    serialized_dag = types.SimpleNamespace(dag_id="d")  # no get_template_env, as SerializedDAG
    task = types.SimpleNamespace(
        dag=serialized_dag,
        template_ext=(),
        template_fields=op.template_fields,
        start_trigger_args=op.start_trigger_args,
    )
    trigger.task_instance = types.SimpleNamespace(task_id="t", task=task)  # type: ignore[assignment]
    trigger.render_template_fields({"ds": "2026-12-07", "ti": FakeTaskInstance()})
    assert trigger.parameters()["conf"]["spark.app.day"] == "2026-12-07"


async def test_a_template_the_triggerer_cannot_render_ends_the_task_naming_its_parameter(
    followed: list[Any],
) -> None:
    """The DAG's macros and filters never reach the triggerer (its DAG is the serialized
    one): a DAG the parse-time check could not see (macros added after the tasks) fails
    there as invalid input, never retried, and nothing is submitted."""
    import json

    from airflow.sdk import DAG
    from airflow.serialization.serialized_objects import DagSerialization

    with DAG("d", schedule=None) as dag:
        conf = {"spark.a": "{{ ds }}", "spark.b": "{{ team_bucket() }}/{{ ds }}"}
        op = operator(conf=conf, retries=2)
    dag.user_defined_macros = {"team_bucket": lambda: "s3a://team"}
    assert op.render_template("{{ team_bucket() }}", {}, dag.get_template_env()) == "s3a://team"
    served = DagSerialization.from_dict(json.loads(json.dumps(DagSerialization.to_dict(dag))))
    trigger = with_run(trigger_of(op), FakeRun(start=AssertionError("submitted")))
    ti: Any = trigger.task_instance
    ti.task = served.get_task("spark_pi")  # as the triggerer's task instance carries it
    trigger.task_instance = ti  # the triggerer sets the task's template fields from it
    trigger.render_template_fields({"ds": "2026-12-07", "ti": ti})
    (event,) = await events(trigger)
    assert type(event) is TriggerEvent  # tries are left: a worker fails it, not retried
    failure = event.payload["failure"]
    assert failure["kind"] == "invalid_input"
    assert failure["message"].startswith("conf: a template does not render in the triggerer")
    assert "'team_bucket' is undefined" in failure["message"]
    assert followed == []


def test_a_filter_the_triggerer_does_not_know_is_kept_as_the_reason() -> None:
    trigger = trigger_of(operator(application_args=["{{ ds | shout }}"]))
    trigger.render_template_fields({"ds": "2026-12-07", "ti": FakeTaskInstance()})
    assert trigger._unrendered is not None
    assert trigger._unrendered.startswith("application_args: a template does not render")
    assert "No filter named 'shout'" in trigger._unrendered
    assert "user_defined_filters do not reach" in trigger._unrendered


def test_a_template_that_does_not_parse_is_kept_as_the_reason_without_the_dags_names() -> None:
    trigger = trigger_of(operator(namespace="team-{{ ds "))
    trigger.render_template_fields({"ds": "2026-12-07", "ti": FakeTaskInstance()})
    assert trigger._unrendered is not None
    assert trigger._unrendered.startswith("namespace: a template does not render")
    assert "TemplateSyntaxError" in trigger._unrendered
    assert "user_defined" not in trigger._unrendered


def served_task(dag: Any, task_id: str) -> Any:
    """The task as the triggerer's task instance carries it: from the serialized DAG."""
    import json

    from airflow.serialization.serialized_objects import DagSerialization

    served = DagSerialization.from_dict(json.loads(json.dumps(DagSerialization.to_dict(dag))))
    return served.get_task(task_id)


def test_a_misspelt_name_fails_in_the_triggerer_as_in_a_worker() -> None:
    """The triggerer's own sandbox renders an undefined name as ""; a worker's raises, and
    so does the environment the trigger renders in (StrictUndefined)."""
    from airflow.sdk import DAG

    with DAG("d", schedule=None):
        op = operator(namespace="team-{{ dss }}")
    trigger = trigger_of(op)
    trigger.task_instance = types.SimpleNamespace(
        task_id="spark_pi", task=served_task(op.dag, "spark_pi")
    )  # type: ignore[assignment]
    trigger.render_template_fields({"ds": "2026-12-07", "ti": FakeTaskInstance()})
    assert trigger._unrendered is not None
    assert trigger._unrendered.startswith("namespace: a template does not render")
    assert "'dss' is undefined" in trigger._unrendered


def test_a_dag_rendering_native_objects_renders_them_in_the_triggerer_too() -> None:
    from airflow.sdk import DAG

    with DAG("d", schedule=None, render_template_as_native_obj=True):
        op = operator(application_args=["{{ 3 + 4 }}"], namespace="team-{{ ds }}")
    trigger = trigger_of(op)
    trigger.task_instance = types.SimpleNamespace(
        task_id="spark_pi", task=served_task(op.dag, "spark_pi")
    )  # type: ignore[assignment]
    trigger.render_template_fields({"ds": "2026-12-07", "ti": FakeTaskInstance()})
    assert trigger._unrendered is None
    assert trigger.parameters()["application_args"] == [7]
    assert trigger.parameters()["namespace"] == "team-2026-12-07"
