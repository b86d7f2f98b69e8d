"""The sensor's poke, deferral and worker-free logic on plain pods, through a fake sync
client."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from airflow_provider_sparkk8s.application.task.sensor_end import sensed, sensor_timed_out
from airflow_provider_sparkk8s.errors import (
    ApplicationFailed,
    ConfigurationError,
    InfrastructureFailure,
    KubeApiError,
    SparkConfError,
)
from airflow_provider_sparkk8s.objects import newest_driver
from airflow_provider_sparkk8s.sensors import spark_k8s as sensor_module
from airflow_provider_sparkk8s.sensors.spark_k8s import SparkK8sApplicationSensor
from airflow_provider_sparkk8s.triggers.spark_k8s import SparkK8sApplicationTrigger
from airflow_provider_sparkk8s.triggers.spark_k8s_sensor import SparkK8sSensorTrigger
from airflow_provider_sparkk8s.version_compat import (
    START_FROM_TRIGGER_RENDERS,
    AirflowFailException,
    AirflowSensorTimeout,
    AirflowSkipException,
    TaskDeferred,
)
from testenv.harness.pod_builders import APP, SCHEDULED, pod, running, terminated, waiting


class FakeClient:
    def __init__(self, pods):
        self.pods = pods
        self.requests = []
        self.closed = False

    def request(self, method, path, params=None):
        self.requests.append((method, path, dict(params or {})))
        if "/pods/" in path:
            name = path.rsplit("/", 1)[-1]
            for p in self.pods:
                if p["metadata"]["name"] == name:
                    return p
            raise KubeApiError(404, "NotFound", f"pods {name} not found", method=method, path=path)
        selector = (params or {}).get("labelSelector", "")
        wanted = dict(term.split("=", 1) for term in selector.split(",") if "=" in term)
        return {
            "items": [
                p
                for p in self.pods
                if all(p["metadata"]["labels"].get(k) == v for k, v in wanted.items())
            ]
        }

    def watch(self, path, params=None, *, read_timeout=None):
        """No changes between pokes: each poke's list (the fake's lists carry no
        resourceVersion to resume from) is what it sees."""
        self.requests.append(("WATCH", path, dict(params or {})))
        return iter(())


class FakeHook:
    def __init__(self, client):
        self.client = client

    def get_client(self):
        return self.client

    def get_namespace(self):
        return "ns"

    def close(self):
        self.client.closed = True


def sensor(client, monkeypatch, **kwargs):
    s = SparkK8sApplicationSensor(task_id="wait", **kwargs)
    monkeypatch.setattr(s, "_hook", lambda: FakeHook(client))
    return s


def test_exactly_one_way_of_naming_the_application():
    with pytest.raises(SparkConfError, match="exactly one of"):
        SparkK8sApplicationSensor(task_id="t")
    with pytest.raises(SparkConfError, match="exactly one of"):
        SparkK8sApplicationSensor(task_id="t", application_id=APP, driver_pod_name="d")


def test_poke_by_application_id_waits_then_succeeds(monkeypatch):
    client = FakeClient([pod("d", phase="Running", containers=[running()])])
    s = sensor(client, monkeypatch, application_id=APP)
    assert s.poke({}) is False
    client.pods = [pod("d", phase="Succeeded", containers=[terminated(0)])]
    result = s.poke({})
    assert result.is_done and result.xcom_value["state"] == "succeeded"
    assert result.xcom_value["application_id"] == APP
    assert client.requests[-2][2] == {"labelSelector": f"spark-app-selector={APP}"}


def test_every_poke_closes_the_client_it_used(monkeypatch):
    client = FakeClient([pod("d", phase="Running", containers=[running()])])
    assert sensor(client, monkeypatch, application_id=APP).poke({}) is False
    assert client.closed


def test_poke_fails_the_task_when_the_driver_fails(monkeypatch):
    client = FakeClient([pod("d", phase="Failed", containers=[terminated(4, "Error", "boom")])])
    with pytest.raises(ApplicationFailed, match="exit code 4: boom"):
        sensor(client, monkeypatch, application_id=APP).poke({})


def test_poke_fails_at_once_when_the_drivers_image_does_not_exist(monkeypatch):
    answer = (
        'rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/apache/'
        'spark:3.5.99": failed to resolve reference "docker.io/apache/spark:3.5.99": '
        "docker.io/apache/spark:3.5.99: not found"
    )
    status = waiting("ErrImagePull", answer)
    status["image"] = "apache/spark:3.5.99"
    client = FakeClient([pod("d", conditions=SCHEDULED, containers=[status])])
    with pytest.raises(ConfigurationError, match=r'ImageNotFound: image "apache/spark:3\.5\.99"'):
        sensor(client, monkeypatch, application_id=APP).poke({})


def test_poke_by_driver_pod_name_resolves_the_application(monkeypatch):
    other = "spark-" + "e" * 32
    client = FakeClient(
        [
            pod("d", phase="Succeeded", containers=[terminated(0)]),
            pod("x", app=other, phase="Failed", containers=[terminated(1)]),
        ]
    )
    assert sensor(client, monkeypatch, driver_pod_name="d").poke({}).is_done
    assert sensor(client, monkeypatch, driver_pod_name="missing").poke({}) is False


def test_poke_by_label_selector_takes_the_newest_driver(monkeypatch):
    newer = "spark-" + "a" * 32
    old = pod("old", phase="Failed", containers=[terminated(1)])
    new = pod("new", app=newer, phase="Running", containers=[running()])
    new["metadata"]["creationTimestamp"] = "2026-02-01T00:00:00Z"
    for p in (old, new):
        p["metadata"]["labels"]["job"] = "nightly"
    client = FakeClient([old, new])
    assert newest_driver([old, new]) is new
    assert sensor(client, monkeypatch, label_selector="job=nightly").poke({}) is False


def test_a_driver_that_disappears_between_pokes_fails(monkeypatch):
    client = FakeClient([pod("d", phase="Running", containers=[running()])])
    s = sensor(client, monkeypatch, application_id=APP)
    assert s.poke({}) is False
    client.pods = []
    with pytest.raises(ApplicationFailed, match="disappeared"):
        s.poke({})


def test_a_driver_marked_for_eviction_then_gone_fails_as_evicted(monkeypatch):
    """The previous poke saw the Eviction API's DisruptionTarget condition on the running
    driver; the next lists no pod (deleted before its container's end was reported)."""
    evicting = {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI"}
    client = FakeClient([pod("d", phase="Running", containers=[running()], conditions=[evicting])])
    s = sensor(client, monkeypatch, application_id=APP)
    assert s.poke({}) is False
    client.pods = []
    with pytest.raises(InfrastructureFailure) as caught:
        s.poke({})
    assert caught.value.reason == "EvictionByEvictionAPI"
    assert "disappeared" not in str(caught.value)


def test_deferrable_mode_defers_to_the_application_trigger(monkeypatch):
    client = FakeClient([pod("d", phase="Running", containers=[running()])])
    s = sensor(client, monkeypatch, driver_pod_name="d", deferrable=True, timeout=600)
    with pytest.raises(TaskDeferred) as deferred:
        s.execute({})
    trigger = deferred.value.trigger
    assert isinstance(trigger, SparkK8sApplicationTrigger)
    assert (trigger.application_id, trigger.driver_pod_name, trigger.namespace) == (APP, "d", "ns")
    assert trigger.delete_on_kill is False
    assert deferred.value.method_name == "execute_complete"
    assert deferred.value.timeout.total_seconds() == 600


def test_deferrable_mode_without_a_driver_yet_checks_again_later(monkeypatch):
    s = sensor(FakeClient([]), monkeypatch, application_id=APP, deferrable=True, poke_interval=7)
    with pytest.raises(TaskDeferred) as deferred:
        s.execute({})
    assert deferred.value.method_name == "execute"
    assert type(deferred.value.trigger).__name__ == "TimeDeltaTrigger"


def test_execute_complete_returns_success_and_raises_otherwise():
    s = SparkK8sApplicationSensor(task_id="t", application_id=APP)
    assert (
        s.execute_complete({}, {"status": "success", "state": "succeeded"})["state"] == "succeeded"
    )
    with pytest.raises(ApplicationFailed, match="StartupTimeout: the driver did not start"):
        s.execute_complete(
            {},
            {
                "status": "timeout",
                "application_id": APP,
                "reason": "StartupTimeout",
                "message": "the driver did not start within 5s",
            },
        )


def test_the_timeout_window_travels_through_every_deferral(monkeypatch):
    """Re-deferring while the application does not exist never restarts the window."""
    s = sensor(FakeClient([]), monkeypatch, application_id=APP, deferrable=True,
               poke_interval=7, timeout=30)  # fmt: skip
    with pytest.raises(TaskDeferred) as first:
        s.execute({})
    deadline = first.value.kwargs["deadline"]
    assert first.value.timeout.total_seconds() == 30
    later = datetime.fromisoformat(deadline) - timedelta(seconds=5)
    monkeypatch.setattr(sensor_module, "datetime", FrozenClock(later))
    with pytest.raises(TaskDeferred) as second:
        s.execute({}, event=None, deadline=deadline)
    assert second.value.kwargs["deadline"] == deadline  # the same end, not a new one
    assert second.value.timeout.total_seconds() == 5
    # Never waits past the end (the trigger's moment is real time + min(7s, 5s left)).
    wait = (second.value.trigger.moment - datetime.now(UTC)).total_seconds()
    assert 4 <= wait <= 5
    monkeypatch.setattr(sensor_module, "datetime", FrozenClock(later + timedelta(seconds=6)))
    with pytest.raises(AirflowSensorTimeout, match=APP):
        s.execute({}, event=None, deadline=deadline)


def test_soft_fail_skips_when_the_window_ends(monkeypatch):
    s = sensor(FakeClient([]), monkeypatch, application_id=APP, deferrable=True, soft_fail=True)
    with pytest.raises(AirflowSkipException):
        s.execute({}, deadline=(datetime.now(UTC) - timedelta(seconds=1)).isoformat())


def test_resumed_without_an_event_the_sensor_looks_again(monkeypatch):
    client = FakeClient([pod("d", phase="Running", containers=[running()])])
    s = sensor(client, monkeypatch, driver_pod_name="d", deferrable=True, timeout=600)
    deadline = (datetime.now(UTC) + timedelta(seconds=100)).isoformat()
    with pytest.raises(TaskDeferred) as deferred:
        s.execute_complete({}, None, deadline=deadline)
    assert isinstance(deferred.value.trigger, SparkK8sApplicationTrigger)
    assert deferred.value.kwargs == {"deadline": deadline}
    with pytest.raises(TaskDeferred):
        s.execute_complete({}, {"partial": True}, deadline=deadline)


class FrozenClock:
    """Stands in for `datetime` in the sensor module: `now()` is fixed, the rest is real."""

    def __init__(self, now: datetime):
        self._now = now

    def now(self, tz=None):
        return self._now

    def fromisoformat(self, text):
        return datetime.fromisoformat(text)


@pytest.mark.parametrize(
    ("configured", "given", "expected"),
    [(None, None, False), ("True", None, True), ("False", None, False), ("True", False, False)],
)
def test_deferrable_defaults_to_operators_default_deferrable(
    monkeypatch: pytest.MonkeyPatch, configured: str | None, given: bool | None, expected: bool
) -> None:
    if configured is None:
        monkeypatch.delenv("AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE", raising=False)
    else:
        monkeypatch.setenv("AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE", configured)
    sensor = SparkK8sApplicationSensor(task_id="wait", application_id=APP, deferrable=given)
    assert sensor.deferrable is expected


class RecordingTaskInstance:
    """Records the XComs read and written (a missing XCom read logs an error in Airflow)."""

    task_id, map_index, try_number = "wait", -1, 1

    def __init__(self):
        self.pulled: list[str] = []
        self.pushed: dict[str, object] = {}

    def xcom_pull(self, task_ids=None, key="return_value", map_indexes=None):
        self.pulled.append(key)
        return self.pushed.get(key)

    def xcom_push(self, key, value):
        self.pushed[key] = value


def test_the_first_check_reads_no_deadline_xcom_and_a_resume_reads_it(monkeypatch):
    client = FakeClient([])
    s = sensor(client, monkeypatch, application_id=APP, deferrable=True, timeout=600)
    ti = RecordingTaskInstance()
    with pytest.raises(TaskDeferred) as first:
        s.execute({"ti": ti})
    assert ti.pulled == []
    assert ti.pushed["sensor_deadline"]["deadline"] == first.value.kwargs["deadline"]
    # dag.test() resumes with the trigger's event only: the deadline comes from the XCom
    with pytest.raises(TaskDeferred) as second:
        s.execute({"ti": ti}, event={"fired": True})
    assert ti.pulled == ["sensor_deadline"]
    assert second.value.kwargs["deadline"] == first.value.kwargs["deadline"]


def test_each_deferral_is_bounded_by_what_is_left_of_execution_timeout(monkeypatch):
    client = FakeClient([pod("d", phase="Running", containers=[running()])])
    s = sensor(
        client,
        monkeypatch,
        driver_pod_name="d",
        deferrable=True,
        timeout=3600,
        execution_timeout=timedelta(minutes=10),
    )
    ti = RecordingTaskInstance()
    ti.start_date = datetime.now(UTC) - timedelta(minutes=4)
    with pytest.raises(TaskDeferred) as deferred:
        s.execute({"ti": ti})
    assert timedelta(minutes=5, seconds=50) < deferred.value.timeout <= timedelta(minutes=6)
    # Past it already: the sensor's timeout, naming the driver, and the driver left running.
    ti.start_date = datetime.now(UTC) - timedelta(minutes=11)
    with pytest.raises(AirflowSensorTimeout, match=r"execution_timeout=600s.*ns:d.*left running"):
        s.execute({"ti": ti})
    assert ("DELETE", "/api/v1/namespaces/ns/pods/d", {}) not in client.requests


def test_a_deferral_timeout_names_the_driver_and_deletes_it_only_when_asked(monkeypatch):
    timed_out = ("__fail__", {"error": "Trigger timeout"})
    client = FakeClient([pod("d", phase="Running", containers=[running()])])
    kept = sensor(client, monkeypatch, driver_pod_name="d", deferrable=True)
    with pytest.raises(AirflowSensorTimeout, match=r"driver pod ns:d .*left running"):
        kept.resume_execution(*timed_out, {})
    assert not [r for r in client.requests if r[0] == "DELETE"]
    soft = sensor(client, monkeypatch, driver_pod_name="d", deferrable=True, soft_fail=True)
    with pytest.raises(AirflowSkipException):
        soft.resume_execution(*timed_out, {})


class KueueFakeClient(FakeClient):
    """Also answers the Workload and the LocalQueue of a queued driver."""

    def request(self, method, path, params=None):
        if "/apis/kueue.x-k8s.io/" not in path:
            return super().request(method, path, params)
        self.requests.append((method, path, dict(params or {})))
        if path.endswith(f"/workloads/{APP}"):
            reserved = {"type": "QuotaReserved", "status": "False", "message": "no room"}
            return {"spec": {"queueName": "team-queue"}, "status": {"conditions": [reserved]}}
        assert path.endswith("/localqueues/team-queue"), path
        return {"spec": {"clusterQueue": "cq"}}


def test_a_poke_names_the_cluster_queue_and_kueues_reason_of_a_queued_driver(monkeypatch):
    queued = pod("d")
    queued["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "team-queue"
    queued["spec"]["schedulingGates"] = [{"name": "kueue.x-k8s.io/admission"}]
    client = KueueFakeClient([queued])
    s = sensor(client, monkeypatch, application_id=APP)
    assert s.poke({}) is False
    state = s._following[1].state  # type: ignore[index]
    assert (state.reason, state.message) == ("QueuedByKueue", "queued in ClusterQueue cq: no room")
    kueue_reads = [path for _, path, _ in client.requests if "kueue.x-k8s.io" in path]
    assert len(kueue_reads) == 2
    assert s.poke({}) is False  # the next poke, within the minute: no read
    assert len([path for _, path, _ in client.requests if "kueue.x-k8s.io" in path]) == 2


# ---------------------------------------------------------------------- worker-free

NEEDS_WORKER_FREE = pytest.mark.skipif(
    not START_FROM_TRIGGER_RENDERS, reason="worker-free tasks need Airflow 3.3"
)


@NEEDS_WORKER_FREE
def test_worker_free_hands_the_sensors_parameters_to_its_trigger():
    s = SparkK8sApplicationSensor(
        task_id="wait",
        label_selector="job={{ ds }}",
        start_from_trigger=True,
        timeout=600,
        poke_interval=5,
        delete_on_timeout=True,
        execution_timeout=timedelta(minutes=30),
    )
    args = s.start_trigger_args
    assert args.trigger_cls == "airflow_provider_sparkk8s.triggers.spark_k8s_sensor.SparkK8sSensorTrigger"  # fmt: skip
    assert (args.next_method, args.timeout) == ("execute_worker_free_end", timedelta(seconds=660))
    kwargs = args.trigger_kwargs
    assert (kwargs["label_selector"], kwargs["timeout"], kwargs["poke_interval"]) == ("job={{ ds }}", 600.0, 5.0)  # fmt: skip
    assert (kwargs["execution_timeout"], kwargs["delete_on_timeout"]) == (1800.0, True)
    trigger = SparkK8sSensorTrigger(**kwargs)
    assert trigger.serialize()[1] == kwargs
    # Every templated field of the sensor is the trigger's, for the triggerer to render.
    assert set(s.template_fields) == set(trigger.template_fields) <= set(kwargs)


@NEEDS_WORKER_FREE
@pytest.mark.parametrize(
    ("given", "key"),
    [
        ({"mode": "reschedule"}, "mode"),
        ({"exponential_backoff": True}, "exponential_backoff"),
        ({"silent_fail": True}, "silent_fail"),
        ({"never_fail": True}, "never_fail"),
        ({"application_id": None, "driver_pod_name": lambda: "d"}, "driver_pod_name"),
    ],
)
def test_worker_free_refuses_what_needs_a_worker_when_the_dag_is_parsed(given, key):
    params = {"task_id": "wait", "application_id": APP, "start_from_trigger": True, **given}
    with pytest.raises(SparkConfError) as caught:
        SparkK8sApplicationSensor(**params)
    assert caught.value.key == key and "start_from_trigger=True" in str(caught.value)


def test_worker_free_before_airflow_3_3_is_refused_naming_its_version(monkeypatch):
    monkeypatch.setattr(sensor_module, "START_FROM_TRIGGER_RENDERS", False)
    with pytest.raises(SparkConfError) as caught:
        SparkK8sApplicationSensor(task_id="wait", application_id=APP, start_from_trigger=True)
    assert caught.value.key == "start_from_trigger"
    assert f"Airflow {sensor_module.AIRFLOW_VERSION}" in str(caught.value)


@NEEDS_WORKER_FREE
def test_a_worker_free_end_handed_to_a_worker_fails_as_the_deferred_sensor_would():
    s = SparkK8sApplicationSensor(task_id="wait", application_id=APP, start_from_trigger=True)
    ti = RecordingTaskInstance()
    failed = sensed(
        {"status": "failed", "application_id": APP, "reason": "Error", "exit_code": 1},
        may_retry=True,
        policy=True,
        memory_factor=None,
    )
    with pytest.raises(AirflowFailException) as caught:
        s.execute_worker_free_end({"ti": ti}, event=failed.worker_payload())
    assert isinstance(caught.value, ApplicationFailed)  # the typed outcome, not retried
    timed_out = sensor_timed_out("Sensor timed out (timeout=60s)", soft_fail=False, may_retry=True)
    with pytest.raises(AirflowSensorTimeout, match="timeout=60s"):
        s.execute_worker_free_end({"ti": ti}, event=timed_out.worker_payload())


@NEEDS_WORKER_FREE
def test_a_worker_free_sensor_serializes_its_start_trigger_args_for_the_scheduler():
    """The scheduler defers from the serialized task; the triggerer decodes the kwargs and
    renders those the sensor templates."""
    import json

    from airflow.sdk import DAG
    from airflow.serialization.serialized_objects import BaseSerialization, DagSerialization

    with DAG("w", start_date=datetime(2026, 1, 1), schedule=None) as dag:
        SparkK8sApplicationSensor(
            task_id="free", application_id="{{ dag_run.conf['app'] }}", start_from_trigger=True
        )
    data = json.loads(json.dumps(DagSerialization.to_dict(dag)))
    DagSerialization.validate_schema(data)
    back = DagSerialization.from_dict(data).get_task("free")
    assert back.start_from_trigger is True
    kwargs = BaseSerialization.deserialize(back.start_trigger_args.trigger_kwargs)
    trigger = SparkK8sSensorTrigger(**kwargs)
    trigger.render_template_fields({"dag_run": {"conf": {"app": APP}}})
    assert trigger.application_id == APP


@NEEDS_WORKER_FREE
@pytest.mark.parametrize(
    ("free_id", "accepted"),
    [("'{{ app_of(ds) }}'", False), ("'{{ ds | app_name }}'", False), ("'{{ params.app }}'", True)],
)
def test_a_worker_free_sensor_using_the_dags_macros_or_filters_fails_the_dag_file(
    tmp_path: Path, free_id: str, accepted: bool
) -> None:
    """Parsed as the dag processor parses it; a worker-mode sensor may use them."""
    from airflow.dag_processing.dagbag import DagBag

    (tmp_path / "sensors.py").write_text(
        "from airflow.sdk import DAG\n"
        "from airflow_provider_sparkk8s.sensors.spark_k8s import SparkK8sApplicationSensor\n"
        "with DAG('sensors', schedule=None, params={'app': 'spark-1'},\n"
        "         user_defined_macros={'app_of': lambda day: 'spark-' + day},\n"
        "         user_defined_filters={'app_name': lambda day: 'spark-' + day}):\n"
        "    SparkK8sApplicationSensor(task_id='in_worker', application_id='{{ app_of(ds) }}',\n"
        "                              namespace='{{ ds | app_name }}')\n"
        f"    SparkK8sApplicationSensor(task_id='free', application_id={free_id},\n"
        "                              start_from_trigger=True)\n"
    )
    bag = DagBag(dag_folder=str(tmp_path))
    if accepted:
        assert bag.import_errors == {}
        assert sorted(bag.dags["sensors"].task_ids) == ["free", "in_worker"]
        return
    (error,) = bag.import_errors.values()
    assert f"SparkConfError: application_id={free_id} is invalid" in error
    assert "user_defined_" in error and "start_from_trigger=False" in error
