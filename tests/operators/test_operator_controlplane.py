"""The operator in a real Airflow 3 process (`dag.test()` in a subprocess, SQLite) against the
real API server, with KWOK moving the driver through its phases.

One DAG holds the independent scenarios (Airflow runs its tasks one after the other, the
deferred ones through the trigger in-process), so one Airflow start-up serves them all; the
scenarios that kill or race processes get their own runs.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import re
import signal
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from airflow_provider_sparkk8s.application.task.task_identity import (
    TASK_INSTANCE_ANNOTATION,
    TASK_INSTANCE_LABEL,
    TaskInstanceRef,
    driver_pod_name,
)
from airflow_provider_sparkk8s.cli.submit import run as cli_run
from airflow_provider_sparkk8s.version_compat import (
    AIRFLOW_V_3_1_PLUS,
    KILL_WHILE_DEFERRED_REACHES_TRIGGER,
)
from testenv.harness.kube import request
from testenv.harness.pods import (
    HOLD,
    MISSING_IMAGE,
    UNPULLABLE_IMAGE,
    create,
    get_pod,
    phase,
    pod_manifest,
    wait_for_pod,
    wait_for_pod_gone,
)
from testenv.harness.waiting import wait_for
from tests.operators.airflow_harness import (
    LOGICAL_DATE,
    AirflowHome,
    RunResult,
    dag_source,
    migrate_template,
    operator_source,
)
from tests.support.kills import answered

pytestmark = [pytest.mark.controlplane, pytest.mark.airflow, pytest.mark.timeout(1500)]

RUN_ID = f"manual__{LOGICAL_DATE}"
ANNOTATION = "spark.kubernetes.driver.annotation.kwok.sparkk8s.io/"
PLANTED_CONF_SECRET = "planted-s3-secret-4b1d9e"
PLANTED_ENV_SECRET = "planted-env-token-77c2a0"
COMMON = {
    "application": "local:///opt/spark/examples/jars/spark-examples.jar",
    "java_class": "org.apache.spark.examples.SparkPi",
    "image": "apache/spark:4.0.1",
    "spark_version": "4.0.1",
    "poll_interval": 0.5,
}


def task(**overrides: Any) -> dict[str, Any]:
    kwargs = {**COMMON, **overrides}
    conf = dict(kwargs.pop("conf", {}))
    for key, value in kwargs.pop("kwok", {}).items():
        conf[ANNOTATION + key] = value
    kwargs["conf"] = conf
    return kwargs


def pods_of(api, namespace: str, dag_id: str, task_id: str) -> list[dict]:
    selector = f"sparkk8s.io/dag-id={dag_id},sparkk8s.io/task-id={task_id},spark-role=driver"
    listing = request(api, "GET", f"/api/v1/namespaces/{namespace}/pods?labelSelector={selector}")
    return listing["items"]


def expected_pod(dag_id: str, task_id: str, submission: int = 1, name: str | None = None) -> str:
    return driver_pod_name(name or task_id, TaskInstanceRef(dag_id, task_id, RUN_ID), submission)


@pytest.fixture(scope="session")
def airflow_template(tmp_path_factory) -> Path:
    return migrate_template(tmp_path_factory.mktemp("airflow-template"))


def inline_kubeconfig(control_plane, namespace: str) -> tuple[str, list[str]]:
    """The admin kubeconfig with the client key inline, and pieces of that key to look for."""
    document = json.loads(
        control_plane.write_kubeconfig(
            Path(control_plane.workdir) / f"{namespace}.kc", namespace
        ).read_text()
    )
    user = document["users"][0]["user"]
    key_pem = Path(user.pop("client-key")).read_text()
    cert_pem = Path(user.pop("client-certificate")).read_text()
    user["client-key-data"] = base64.b64encode(key_pem.encode()).decode()
    user["client-certificate-data"] = base64.b64encode(cert_pem.encode()).decode()
    key_body = "".join(line for line in key_pem.splitlines() if "-----" not in line)
    secrets = [key_body[20:60], key_body[-60:-20], user["client-key-data"][20:60]]
    return yaml.safe_dump(document), secrets


@pytest.fixture
def home(tmp_path, airflow_template, control_plane, namespace) -> AirflowHome:
    content, secrets = inline_kubeconfig(control_plane, namespace)
    connection = {
        "conn_type": "spark_k8s",
        "extra": {"kube_config_secret": content, "namespace": namespace},
    }
    airflow_home = AirflowHome(tmp_path / "airflow", airflow_template, connection)
    airflow_home.secrets = secrets  # type: ignore[attr-defined]
    return airflow_home


SCENARIOS = {
    # deferrable; secrets planted in conf and env_vars; link template from the config
    "succeeds": task(
        deferrable=True, kwok={"run-ms": "1500"}, on_finish_action="delete_succeeded_pod",
        conf={"spark.hadoop.fs.s3a.secret.key": PLANTED_CONF_SECRET},
        env_vars={"API_TOKEN": PLANTED_ENV_SECRET},
    ),
    "fails_with_exit_code": task(
        deferrable=True, on_finish_action="delete_succeeded_pod",
        kwok={"run-ms": "800", "exit-code": "3", "reason": "Error", "message": "Job aborted: stage 2 failed"},
    ),
    "oom_killed": task(
        deferrable=False, on_finish_action="delete_pod",
        kwok={"run-ms": "800", "exit-code": "137", "reason": "OOMKilled"},
    ),
    "image_pull_timeout": task(
        deferrable=True, image=UNPULLABLE_IMAGE, startup_timeout=6, on_finish_action="keep_pod",
    ),
    # the registry says the image does not exist: failed at once, not retried, driver deleted
    "image_missing": task(
        deferrable=True, image=MISSING_IMAGE, retries=2, on_finish_action="keep_pod",
    ),
    "unschedulable_timeout": task(
        deferrable=False, startup_timeout=6, on_finish_action="keep_pod",
        conf={"spark.kubernetes.node.selector.sparkk8s-test": "nowhere"},
    ),
    "dry_run": task(dry_run=True, conf={"spark.hadoop.fs.s3a.secret.key": PLANTED_CONF_SECRET}),
    "keeps_pod": task(deferrable=False, on_finish_action="keep_pod", kwok={"run-ms": "500"}),
    # bad input fails at once, whatever the retries (AirflowFailException)
    "bad_input_not_retried": task(executor_memory="lots", retries=3),
}  # fmt: skip
# A deferrable sensor on an application that never exists: its timeout bounds the wait.
MISSING_APP = "spark-" + "0" * 32
SENSOR_TASK = (
    "    SparkK8sApplicationSensor(task_id='sensor_times_out', application_id="
    f"{MISSING_APP!r}, deferrable=True, timeout=6, poke_interval=1)\n"
)
SENSOR_IMPORT = (
    "from airflow_provider_sparkk8s.sensors.spark_k8s import SparkK8sApplicationSensor\n"
)


def squeezed(text: str) -> str:
    """`text` without whitespace and box lines: a message as Airflow 3.0's `dags test` prints
    it, wrapped in a rich box, compares with its own squeezed form."""
    return re.sub(r"[\s│]+", "", text)


def sensor_looks(output: str) -> int:
    """How many times the sensor looked for the missing application: its log lines, counted
    by time stamp (Airflow 3.0 writes each line twice, in two time formats)."""
    stamp = r"(\d\d:\d\d:\d\d)[.,](\d{3})\S*\]? .*"
    return len(
        set(re.findall(stamp + f"No Spark driver found yet for application {MISSING_APP}", output))
    )


@pytest.fixture
def scenarios_run(home):
    tasks = "".join(operator_source(task_id, kwargs) for task_id, kwargs in SCENARIOS.items())
    tasks += SENSOR_TASK
    home.write_dag("spark_scenarios", dag_source("spark_scenarios", tasks, SENSOR_IMPORT))
    link = {
        "AIRFLOW__SPARKK8S__SPARK_UI_URL_TEMPLATE": "https://spark.example/{namespace}/{driver_pod}/"
    }
    return home.run("spark_scenarios", timeout=1200, extra_env=link)


def test_scenarios_in_one_real_airflow_run(scenarios_run, home, kube_admin, namespace):
    run = scenarios_run
    dag = "spark_scenarios"
    assert run.db, f"the Airflow run produced no DB dump:\n{run.output[-6000:]}"
    states = {ti["task_id"]: ti["state"] for ti in run.db["task_instances"]}
    tries = {ti["task_id"]: ti["try_number"] for ti in run.db["task_instances"]}
    assert states == {
        "succeeds": "success", "fails_with_exit_code": "failed", "oom_killed": "failed",
        "image_pull_timeout": "failed", "image_missing": "failed",
        "unschedulable_timeout": "failed", "dry_run": "success",
        "keeps_pod": "success", "bad_input_not_retried": "failed", "sensor_times_out": "failed",
    }, run.output[-8000:]  # fmt: skip

    # success, through the trigger: the XCom values, cleanup, owner references
    result = run.xcom("succeeds")
    pod = expected_pod(dag, "succeeds")
    assert re.fullmatch(r"spark-[0-9a-f]{32}", result["application_id"])
    assert result["namespace"] == namespace and result["driver_pod"] == pod
    assert result["submission_id"] == f"{namespace}:{pod}"
    assert (result["state"], result["status"], result["exit_code"]) == ("succeeded", "success", 0)
    # The driver ran 1.5 s (KWOK run-ms), but finishedAt is in whole seconds, so the measured
    # duration can come out anywhere from about 0.5 s up: only its sign and scale are checked.
    assert 0 < result["duration_seconds"] < 120
    assert result["executors"] == {"counts": {}, "failures": []}
    assert result["adopted"] is False
    assert run.xcom("succeeds", "spark_application")["state"] == "succeeded"
    assert run.xcom("succeeds", "_link_SparkUiLink") == f"https://spark.example/{namespace}/{pod}/"
    # a link without a URL is neither read back (an "XCom not found" error line in the task
    # log) nor stored as "" when the task stops; nor is the sensor's deadline on its first try
    keys = {(row["task_id"], row["key"]) for row in run.db["xcoms"]}
    assert ("succeeds", "_link_DriverPodLink") not in keys
    assert not [key for task_id, key in keys if task_id == "dry_run" and key.startswith("_link_")]
    assert "XCom not found" not in run.output, re.findall(r".*XCom not found.*", run.output)
    assert "[DAG TEST] running trigger in line" in run.output
    wait_for_pod_gone(kube_admin, namespace, pod)

    def owned_objects_gone() -> bool:
        services = request(kube_admin, "GET", f"/api/v1/namespaces/{namespace}/services")["items"]
        maps = request(kube_admin, "GET", f"/api/v1/namespaces/{namespace}/configmaps")["items"]
        ours = [m for m in maps if m["metadata"]["name"].startswith("spark-drv-")]
        owners = {
            o["name"] for obj in services + ours for o in obj["metadata"].get("ownerReferences", [])
        }
        return pod not in owners

    wait_for(owned_objects_gone, 60, "the garbage collector removing the Service and ConfigMap")

    # failure with an exit code, a reason and a message; kept on failure
    failed = run.xcom("fails_with_exit_code", "spark_application")
    assert (failed["status"], failed["exit_code"], failed["cause"]) == ("failed", 3, "Error")
    assert failed["reason"] == "application_error"  # the kind
    assert "Error, exit code 3: Job aborted: stage 2 failed" in run.output
    kept = pods_of(kube_admin, namespace, dag, "fails_with_exit_code")
    assert [p["metadata"]["name"] for p in kept] == [expected_pod(dag, "fails_with_exit_code")]

    # OOMKilled, waiting in the worker; delete_pod removes it even on failure
    oom = run.xcom("oom_killed", "spark_application")
    assert (oom["reason"], oom["cause"], oom["exit_code"]) == ("out_of_memory", "OOMKilled", 137)
    assert "OOMKilled, exit code 137" in run.output
    assert pods_of(kube_admin, namespace, dag, "oom_killed") == []

    # the driver never starts: each timeout names its reason, and the driver is deleted
    pull = run.xcom("image_pull_timeout", "spark_application")
    assert (pull["status"], pull["reason"], pull["cause"]) == (
        "timeout",
        "infrastructure",
        "StartupTimeout",
    )
    assert re.search(
        r"StartupTimeout: the driver did not start within 6s \(pending, ImagePullBackOff",
        run.output,
    )
    unschedulable = run.xcom("unschedulable_timeout", "spark_application")
    assert (unschedulable["reason"], unschedulable["cause"]) == ("infrastructure", "StartupTimeout")
    # Airflow 3.0's `dags test` prints the exception in a rich box that wraps it: the
    # "[infrastructure] " prefix moves the wrap to just before "available".
    assert re.search(
        r"did not start within 6s \(pending, Unschedulable: 0/\d+ nodes are", run.output
    )
    for task_id in ("image_pull_timeout", "unschedulable_timeout"):
        assert pods_of(kube_admin, namespace, dag, task_id) == [], task_id
    # the pull timed out (an i/o timeout, transient): the startup timeout names it
    assert "dialtcp192.0.2.10:443:i/otimeout" in squeezed(run.output)

    # the image does not exist: the first ErrImagePull fails it, on its only try (retries=2),
    # naming the image and the registry's answer; the driver goes despite keep_pod
    missing = run.xcom("image_missing", "spark_application")
    assert (missing["status"], missing["reason"], missing["cause"]) == (
        "failed",
        "configuration_error",
        "ImageNotFound",
    )
    assert tries["image_missing"] == 1
    # from the driver pod's creation to the task's end (no driver end: the report's "now")
    assert missing["duration_seconds"] < 60, missing
    said = squeezed(run.output)  # 3.0 prints the exception wrapped in a box
    assert (
        squeezed(
            f"[configuration_error] Spark application {missing['application_id']} (driver pod "
            f'{missing["submission_id"]}) failed: ImageNotFound: image "{MISSING_IMAGE}" of '
            f"container spark-kubernetes-driver does not exist in its registry"
        )
        in said
    ), run.output[-6000:]
    assert (
        squeezed(f'failed to resolve reference "{MISSING_IMAGE}": {MISSING_IMAGE}: not found')
        in said
    )
    assert pods_of(kube_admin, namespace, dag, "image_missing") == []

    # dry run: YAML in the log, nothing in the cluster
    assert "Dry run: 3 objects of application" in run.output
    assert "spark.hadoop.fs.s3a.secret.key=*********(redacted)" in run.output
    assert pods_of(kube_admin, namespace, dag, "dry_run") == []
    assert run.xcom("dry_run")["dry_run"] is True

    # keep_pod keeps a succeeded driver
    assert [p["status"]["phase"] for p in pods_of(kube_admin, namespace, dag, "keeps_pod")] == [
        "Succeeded"
    ]

    # bad input: failed on the first try although retries=3, naming the key and the value
    assert tries["bad_input_not_retried"] == 1
    assert "--executor-memory='lots' is invalid" in run.output
    assert pods_of(kube_admin, namespace, dag, "bad_input_not_retried") == []

    # the sensor's timeout bounds a wait for an application that never appears
    assert "Sensor timed out after 6s" in run.output
    # Every run of the sensor before the deadline looked again (never failing early) and the
    # one run after it timed out. How many runs fit in 6 s depends on the machine's load and
    # on when `dags test` resumes a task: 3.1 on at once, 3.0 on its next pass over the DAG.
    runs = run.output.count(
        "[DAG TEST] running task <TaskInstance: spark_scenarios.sensor_times_out "
    )
    looks = sensor_looks(run.output)
    assert looks == runs - 1 and 1 <= looks <= 9, (runs, looks)

    # secrets: the inline client key and the planted values appear nowhere Airflow keeps
    everything = run.everything()
    for secret in [*home.secrets, PLANTED_CONF_SECRET, PLANTED_ENV_SECRET]:
        assert secret not in everything, f"secret {secret[:6]}... leaked"
    assert run.db["rendered_fields"], "no rendered fields were stored"
    assert run.db["triggers"], "no trigger row was stored"


PAUSING_OPERATOR = '''
import os
import time
from pathlib import Path


class PausingOperator(SparkK8sSubmitOperator):
    """Stops between the driver's creation and the deferral, for the kill test."""

    def _publish(self, context, app):
        super()._publish(context, app)
        marker = os.environ.get("PAUSE_MARKER")
        if marker:
            Path(marker).write_text(app.driver_pod)
            time.sleep(3600)
'''


def test_reattach_after_the_worker_is_killed_between_creation_and_deferral(
    home, kube_admin, namespace, tmp_path
):
    dag = "spark_reattach"
    kwargs = task(
        deferrable=True, on_finish_action="keep_pod", kwok={"hold": "true", "run-ms": "300"}
    )
    home.write_dag(
        dag, dag_source(dag, operator_source("job", kwargs, "PausingOperator"), PAUSING_OPERATOR)
    )
    marker = tmp_path / "paused"
    first = home.start(dag, {"PAUSE_MARKER": str(marker)})
    wait_for(marker.exists, 600, "the first attempt to create its driver and pause")
    first.kill()
    pod = marker.read_text()
    assert pod == expected_pod(dag, "job")
    wait_for_pod(kube_admin, namespace, pod, lambda p: phase(p) == "Running", 60, "driver running")

    second = home.start(dag)
    second.wait_for_output("instead of submitting again", 600)
    request(kube_admin, "PATCH", f"/api/v1/namespaces/{namespace}/pods/{pod}",
            {"metadata": {"annotations": {HOLD: "false"}}}, content_type="application/merge-patch+json")  # fmt: skip
    run = second.finish(600)
    assert run.state("job") == "success", run.output[-6000:]
    result = run.xcom("job")
    assert result["adopted"] is True and result["driver_pod"] == pod
    drivers = pods_of(kube_admin, namespace, dag, "job")
    assert [p["metadata"]["name"] for p in drivers] == [pod]  # never a second driver
    assert drivers[0]["metadata"]["labels"]["sparkk8s.io/submission"] == "1"


def resume_on_airflow_3_0(
    home: AirflowHome, dag_id: str, task_id: str, run: RunResult
) -> RunResult:
    """Airflow 3.0's `tasks test` returns once the in-line trigger fires, leaving the task
    scheduled with the trigger's event (3.1 on resumes it at once): run it once more, as the
    scheduler would, to resume it with that event."""
    if AIRFLOW_V_3_1_PLUS:
        return run
    assert run.state(task_id) == "scheduled", run.output[-6000:]
    return home.start_tasks_test(dag_id, task_id).finish(600)


def test_a_deferred_task_killed_and_run_again_resumes_without_the_event(
    home, kube_admin, namespace
):
    """The issue's scenario in real Airflow: `airflow dags test` is killed while its task is
    deferred (the trigger follows the driver), then `airflow tasks test` runs the same task
    instance again. Airflow resumes it with the deferral's kwargs and no event; the task
    finds its driver, follows it again (never a second one) and ends with it."""
    dag = "spark_resume"
    kwargs = task(deferrable=True, on_finish_action="keep_pod", kwok={"hold": "true"})
    home.write_dag(dag, dag_source(dag, operator_source("job", kwargs)))
    first = home.start(dag)
    first.wait_for_output("[DAG TEST] running trigger in line", 600)
    first.kill()
    pod = expected_pod(dag, "job")
    wait_for_pod(kube_admin, namespace, pod, lambda p: phase(p) == "Running", 60, "driver running")

    again = home.start_tasks_test(dag, "job")
    again.wait_for_output("Following driver", 600)
    request(kube_admin, "PATCH", f"/api/v1/namespaces/{namespace}/pods/{pod}",
            {"metadata": {"annotations": {HOLD: "false"}}}, content_type="application/merge-patch+json")  # fmt: skip
    run = again.finish(600)
    assert "TypeError" not in run.output, run.output[-6000:]
    assert "Resumed without the trigger's final event" in run.output
    run = resume_on_airflow_3_0(home, dag, "job", run)
    assert run.state("job") == "success", run.output[-6000:]
    assert run.xcom("job")["driver_pod"] == pod
    assert [p["metadata"]["name"] for p in pods_of(kube_admin, namespace, dag, "job")] == [pod]


def test_a_deferred_sensor_killed_and_run_again_looks_again(home, kube_admin, namespace):
    """The sensor in the same scenario: resumed with its deadline and no event, it finds
    the application again, defers again and succeeds when the driver does."""
    dag = "spark_sensor_resume"
    labels = {"spark-role": "driver", "spark-app-selector": "spark-" + "5" * 32}
    create(kube_admin, namespace, pod_manifest("watched-driver", {HOLD: "true"}, labels))
    sensor = (
        "    SparkK8sApplicationSensor(task_id='wait', driver_pod_name='watched-driver', "
        "deferrable=True, timeout=600, poke_interval=1)\n"
    )
    home.write_dag(dag, dag_source(dag, sensor, SENSOR_IMPORT))
    first = home.start(dag)
    first.wait_for_output("[DAG TEST] running trigger in line", 600)
    first.kill()

    again = home.start_tasks_test(dag, "wait")
    again.wait_for_output("Resumed without the trigger's event", 600)
    request(kube_admin, "PATCH", f"/api/v1/namespaces/{namespace}/pods/watched-driver",
            {"metadata": {"annotations": {HOLD: "false"}}}, content_type="application/merge-patch+json")  # fmt: skip
    run = again.finish(600)
    assert "TypeError" not in run.output, run.output[-6000:]
    run = resume_on_airflow_3_0(home, dag, "wait", run)
    assert run.state("wait") == "success", run.output[-6000:]
    assert run.xcom("wait")["state"] == "succeeded"


CRASHING_OPERATOR = """
from airflow_provider_sparkk8s.operators.driver_cleanup import SparkK8sDriverCleanupOperator


class CrashingOperator(SparkK8sSubmitOperator):
    \"\"\"The worker dies right after the driver exists: the task fails, the driver stays.\"\"\"

    def _publish(self, context, app):
        super()._publish(context, app)
        raise RuntimeError("the worker died after submitting")
"""


GONE_RUN = "manual__1999-01-01T00:00:00+00:00"


def submitted_pod(name: str, ref: TaskInstanceRef) -> dict:
    """A running driver pod as the operator would label and annotate it for `ref`."""
    labels = {"spark-role": "driver", TASK_INSTANCE_LABEL: ref.digest}
    return pod_manifest(name, {HOLD: "true", TASK_INSTANCE_ANNOTATION: ref.key}, labels)


def test_the_cleanup_deletes_drivers_whose_task_instance_finished(
    home, kube_admin, namespace, control_plane, kubeconfig
):
    """Item 8: a driver left running by a task instance that failed, and one whose DAG run
    no longer exists, are listed, then deleted by the clean-up task in real Airflow; the
    driver of a task instance that has not run yet, one of a DAG this Airflow has no run of
    and a pod we did not submit stay."""
    dag = "spark_leftovers"
    kwargs = task(deferrable=False, on_finish_action="keep_pod", kwok={"hold": "true"})
    later = task(dry_run=True)
    tasks = (
        f"    crashes = CrashingOperator(task_id='crashes', **{kwargs!r})\n"
        "    listing = SparkK8sDriverCleanupOperator(task_id='list_leftovers', list_only=True, "
        "trigger_rule='all_done')\n"
        "    cleanup = SparkK8sDriverCleanupOperator(task_id='cleanup', trigger_rule='all_done')\n"
        f"    later = SparkK8sSubmitOperator(task_id='later', **{later!r})\n"
        "    crashes >> listing >> cleanup >> later\n"
    )
    for name, ref in {
        "pending-driver": TaskInstanceRef(dag, "later", RUN_ID),  # not run yet: may adopt it
        "gone-driver": TaskInstanceRef(dag, "crashes", GONE_RUN),  # its DAG run was deleted
        "unknown-driver": TaskInstanceRef("another_airflows_dag", "load", RUN_ID),  # not ours
    }.items():
        create(kube_admin, namespace, submitted_pod(name, ref))
    create(kube_admin, namespace,
           pod_manifest("foreign", {HOLD: "true"}, {"spark-role": "driver"}))  # fmt: skip
    for name in ("pending-driver", "gone-driver", "unknown-driver", "foreign"):
        wait_for_pod(kube_admin, namespace, name, lambda p: phase(p) == "Running", 60, name)
    home.write_dag(dag, dag_source(dag, tasks, CRASHING_OPERATOR))
    run = home.run(dag, timeout=900)
    states = {ti["task_id"]: ti["state"] for ti in run.db["task_instances"]}
    assert states == {
        "crashes": "failed", "list_leftovers": "success", "cleanup": "success", "later": "success"
    }, run.output[-6000:]  # fmt: skip
    crashed = expected_pod(dag, "crashes")
    expected = [
        f"{namespace}:{crashed} (task instance {dag}.crashes of run {RUN_ID} is failed)",
        f"{namespace}:gone-driver (task instance {dag}.crashes of run {GONE_RUN} no longer exists)",
    ]
    assert sorted(run.xcom("list_leftovers")) == sorted(expected)
    assert sorted(run.xcom("cleanup")) == sorted(expected)
    for line in expected:
        assert f"Would delete leftover driver {line}" in run.output
        assert f"Deleting leftover driver {line}" in run.output
    wait_for_pod_gone(kube_admin, namespace, crashed, 60)
    wait_for_pod_gone(kube_admin, namespace, "gone-driver", 60)
    assert get_pod(kube_admin, namespace, "pending-driver") is not None
    assert get_pod(kube_admin, namespace, "foreign") is not None
    assert get_pod(kube_admin, namespace, "unknown-driver") is not None
    assert (
        f"Keeping driver {namespace}:unknown-driver: this Airflow has no run of DAG "
        "'another_airflows_dag'" in run.output
    )

    # by hand: sparkk8s-submit --status lists the drivers left, with their task instance
    out = io.StringIO()
    argv = ["--master", f"k8s://{control_plane.server}", "--status", f"{namespace}:*"]
    env = {"KUBECONFIG": str(kubeconfig), "HOME": str(kubeconfig.parent)}
    assert cli_run(argv, environ=env, out=out, err=io.StringIO()).exit_code == 0
    lines = sorted(out.getvalue().splitlines())
    unknown = f"task instance another_airflows_dag.load of run {RUN_ID}"
    assert lines == [
        f"{namespace}:foreign running",
        f"{namespace}:pending-driver running (task instance {dag}.later of run {RUN_ID})",
        f"{namespace}:unknown-driver running ({unknown})",
    ]


BARRIER_OPERATOR = '''
import os
import time
from pathlib import Path

from airflow_provider_sparkk8s.services.pods.driver_pods import DriverPods


class BarrierPods(DriverPods):
    """Both racers list the task instance's drivers before either submits (the first list
    of a task run is adopt-or-submit's; later ones pass the full barrier at once)."""

    def list_pods(self, namespace, label_selector):
        pods = super().list_pods(namespace, label_selector)
        barrier = Path(os.environ["BARRIER_DIR"])
        (barrier / str(os.getpid())).write_text("listed")
        deadline = time.monotonic() + 600
        while len(list(barrier.iterdir())) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        return pods


class BarrierOperator(SparkK8sSubmitOperator):
    @staticmethod
    def _driver_pods(hook):
        return BarrierPods(hook.get_client(), owns_client=True)
'''


def test_two_concurrent_attempts_of_one_task_instance_make_one_driver(
    tmp_path, airflow_template, control_plane, namespace, kube_admin
):
    dag = "spark_race"
    content, _ = inline_kubeconfig(control_plane, namespace)
    connection = {
        "conn_type": "spark_k8s",
        "extra": {"kube_config_secret": content, "namespace": namespace},
    }
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    kwargs = task(deferrable=True, on_finish_action="keep_pod", kwok={"run-ms": "1500"})
    source = dag_source(dag, operator_source("job", kwargs, "BarrierOperator"), BARRIER_OPERATOR)
    homes = [AirflowHome(tmp_path / f"worker{i}", airflow_template, connection) for i in (1, 2)]
    for airflow_home in homes:
        airflow_home.write_dag(dag, source)
    racers = [airflow_home.start(dag, {"BARRIER_DIR": str(barrier)}) for airflow_home in homes]
    runs = [racer.finish(900) for racer in racers]
    for run in runs:
        assert run.state("job") == "success", run.output[-6000:]
    results = [run.xcom("job") for run in runs]
    assert results[0]["driver_pod"] == results[1]["driver_pod"] == expected_pod(dag, "job")
    assert results[0]["application_id"] == results[1]["application_id"]
    assert sorted(r["adopted"] for r in results) == [False, True]
    assert len(pods_of(kube_admin, namespace, dag, "job")) == 1
    assert any("409" in run.output or "Another worker submitted" in run.output for run in runs)


def test_on_kill_in_the_worker_deletes_the_driver(home, kube_admin, namespace):
    dag = "spark_kill_worker"
    kwargs = task(deferrable=False, on_finish_action="keep_pod", kwok={"hold": "true"})
    home.write_dag(dag, dag_source(dag, operator_source("job", kwargs)))
    pod = expected_pod(dag, "job")
    run = home.start(dag)
    wait_for(lambda: get_pod(kube_admin, namespace, pod), 600, "the driver pod")
    wait_for_pod(kube_admin, namespace, pod, lambda p: phase(p) == "Running", 60, "driver running")
    run.wait_for_output("Spark application", 120)  # the worker is following it
    run.signal(signal.SIGTERM)  # what Airflow's supervisor sends when the task is killed
    wait_for_pod_gone(kube_admin, namespace, pod, 60)
    result = run.finish(300)
    assert f"Deleted driver pod {namespace}/{pod}" in result.output
    assert result.state("job") == "failed"


@pytest.mark.skipif(
    not KILL_WHILE_DEFERRED_REACHES_TRIGGER,
    reason="before 3.3 the triggerer never calls on_kill (the operator warns at deferral)",
)
def test_on_kill_in_deferred_mode_goes_through_the_triggerers_user_action_cancel(
    monkeypatch, kubeconfig, namespace, kube_admin
):
    """Airflow 3.3 cancels a deferred task's trigger with a user-action message when a user
    marks the task failed or clears it; the TriggerRunner then awaits `trigger.on_kill()`."""
    from airflow.jobs.triggerer_job_runner import TriggerRunner
    from airflow.sdk._shared.module_loading import import_string

    from airflow_provider_sparkk8s.operators.spark_k8s import SparkK8sSubmitOperator
    from airflow_provider_sparkk8s.version_compat import TaskDeferred
    from testenv.fakes import FakeTaskInstance

    monkeypatch.setenv("AIRFLOW_DISABLE_GREENBACK_PORTAL", "true")
    monkeypatch.setenv(
        "AIRFLOW_CONN_SPARK_K8S_DEFAULT",
        json.dumps({"conn_type": "spark_k8s", "extra": {"kube_config_path": str(kubeconfig)}}),
    )
    operator = SparkK8sSubmitOperator(
        task_id="killed_deferred", **task(deferrable=True, kwok={"hold": "true"})
    )
    with pytest.raises(TaskDeferred) as deferred:
        operator.execute({"ti": FakeTaskInstance(dag_id="kill_dag", task_id="killed_deferred")})
    classpath, kwargs = deferred.value.trigger.serialize()
    # rebuilt from its kwargs, as the triggerer does; Airflow answers that the user marked it
    trigger = answered(import_string(classpath)(**kwargs), "failed")
    pod = kwargs["driver_pod_name"]
    wait_for_pod(kube_admin, namespace, pod, lambda p: phase(p) == "Running", 60, "driver running")

    async def run_and_cancel() -> None:
        runner = TriggerRunner()
        runner.triggers[1] = {
            "task": None,  # type: ignore[typeddict-item]  # never started: cancelled first
            "name": "killed_deferred",
            "events": 0,
            "is_watcher": False,
        }
        running = asyncio.create_task(runner.run_trigger(1, trigger))
        runner.triggers[1]["task"] = running
        # A user kills a task the trigger is already following: wait until it has seen the
        # driver Running (the pod holds there). Cancelling earlier, while the connection is
        # still being read, loses Airflow's user-action message in asgiref's thread hop.
        deadline = time.monotonic() + 60
        while getattr(trigger.last_state, "state", None) != "running":
            assert not running.done(), "the trigger ended before it saw the driver running"
            assert time.monotonic() < deadline, "the trigger never saw the driver running"
            await asyncio.sleep(0.05)
        runner.to_cancel.append(1)
        await runner.cancel_triggers()
        with pytest.raises(asyncio.CancelledError):
            await running

    asyncio.run(run_and_cancel())
    wait_for_pod_gone(kube_admin, namespace, pod, 60)


EXAMPLES = Path(__file__).resolve().parents[2] / "dags"


@pytest.mark.parametrize("dag_id", ["spark_fan_out", "pyspark_pod_template"])
def test_example_dags_run_in_airflow_against_the_control_plane(home, kube_admin, namespace, dag_id):
    home.write_dag(dag_id, (EXAMPLES / f"{dag_id}.py").read_text())
    run = home.run(dag_id, timeout=900)
    submit_tasks = [
        ti for ti in run.db["task_instances"] if ti["task_id"] in ("daily_aggregate", "pi_py")
    ]
    assert submit_tasks and all(ti["state"] == "success" for ti in submit_tasks), run.output[-6000:]
    results = [run.xcom(ti["task_id"], map_index=ti["map_index"]) for ti in submit_tasks]
    assert all(r["state"] == "succeeded" and r["namespace"] == namespace for r in results)
    assert len({r["driver_pod"] for r in results}) == len(results)  # one driver per map index
    if dag_id == "spark_fan_out":
        assert sorted(ti["map_index"] for ti in submit_tasks) == [0, 1, 2]
        assert run.state("summary") == "success"
        assert set(run.xcom("summary")) == {r["application_id"] for r in results}
