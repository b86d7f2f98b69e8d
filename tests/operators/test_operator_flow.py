"""The operator's flow on an in-memory pod API: which requests, in which order, and what the
task reports. The same scenarios run against the real API server and a real Airflow in
test_operator_controlplane.py; these pin the decisions quickly and exactly."""

from __future__ import annotations

import json
import re
import threading
import time
from typing import Any

import pytest

from airflow_provider_sparkk8s.application.following.tracked import tracked_from_pod
from airflow_provider_sparkk8s.application.task.ownership import ADOPTED_BY_TRY_ANNOTATION
from airflow_provider_sparkk8s.application.task.task_identity import (
    TaskInstanceRef,
    driver_labels,
    driver_pod_name,
)
from airflow_provider_sparkk8s.errors import (
    ApplicationFailed,
    ConfigurationError,
    InfrastructureFailure,
    SparkConfError,
    SubmissionError,
)
from airflow_provider_sparkk8s.links.spark_k8s import DriverPodLink, SparkUiLink
from airflow_provider_sparkk8s.operators.spark_k8s import (
    APPLICATION_XCOM_KEY,
    SparkK8sSubmitOperator,
)
from airflow_provider_sparkk8s.submission.command_line.arguments import load_java_properties
from airflow_provider_sparkk8s.version_compat import (
    START_FROM_TRIGGER_RENDERS,
    AirflowFailException,
    TaskDeferralTimeout,
    TaskDeferred,
    openlineage_lineage,
)
from testenv.fakes import FakeCluster, FakeTaskInstance, driver_status
from testenv.harness.waiting import wait_for

SECRET = "planted-secret-7f3a9c"


def make_operator(**overrides) -> SparkK8sSubmitOperator:
    params: dict[str, Any] = {
        "task_id": "spark_pi",
        "application": "local:///opt/spark/examples/jars/spark-examples.jar",
        "java_class": "org.apache.spark.examples.SparkPi",
        "image": "apache/spark:4.0.1",
        "spark_version": "4.0.1",
        "deferrable": False,
        "poll_interval": 0.01,
        "startup_timeout": 10,  # a test that forgets to move its pod fails instead of hanging
    }
    params.update(overrides)
    return SparkK8sSubmitOperator(**params)


def context(ti: FakeTaskInstance | None = None) -> dict:
    return {"ti": ti or FakeTaskInstance()}


def progress(*statuses: dict, only: str = ""):
    """on_list callback: each pod list moves the driver pods (whose name contains `only`)
    to the next status."""
    remaining = list(statuses)

    def step(cluster: FakeCluster) -> None:
        pods = [p for (_, name), p in cluster.pods.items() if only in name]
        if remaining and pods:
            status = remaining.pop(0)
            for pod in pods:
                pod["status"] = status

    return step


def existing_driver(cluster: FakeCluster, submission: int, status: dict, ti=None, ref=None) -> dict:
    ti = ti or FakeTaskInstance()
    ref = ref or TaskInstanceRef(ti.dag_id, ti.task_id, ti.run_id, ti.map_index)
    labels = {
        **driver_labels(ref, submission),
        "spark-role": "driver",
        "spark-app-selector": f"spark-old{submission}",
    }
    return cluster.add_pod(
        {
            "metadata": {
                "name": driver_pod_name("spark_pi", ref, submission),
                "namespace": "team-a",
                "labels": labels,
            },
            "spec": {"containers": [{"name": "spark-kubernetes-driver"}]},
            "status": status,
        }
    )


def posts(cluster: FakeCluster) -> list[str]:
    return [path for method, path in cluster.requests if method == "POST"]


def test_bad_input_fails_before_any_request_and_is_not_retried(cluster):
    with pytest.raises(AirflowFailException) as error:
        make_operator(image=None).execute(context())
    cause = error.value.__cause__
    assert isinstance(cause, SparkConfError) and cause.key == "image"
    assert "not retried" in str(error.value)
    with pytest.raises(AirflowFailException, match="--executor-memory='lots'"):
        make_operator(executor_memory="lots").execute(context())
    with pytest.raises(AirflowFailException, match=re.escape("spark.executor.instances='0'")):
        make_operator(conf={"spark.executor.instances": "0"}).execute(context())
    assert cluster.requests == []


def test_iec_sizes_follow_the_line_of_the_image_or_spark_version(cluster):
    """`2gib` is a size from Spark 4.2 on: the operator checks with its own line."""
    for image, version in (("apache/spark:4.1.1", None), ("apache/spark:4.3.0", "4.1.0")):
        with pytest.raises(AirflowFailException, match="IEC units such as 2gib"):
            make_operator(image=image, spark_version=version, driver_memory="2gib").execute(
                context()
            )
    assert cluster.requests == []
    cluster.on_list = progress(driver_status("finished"))
    operator = make_operator(
        image="apache/spark:4.2.1", spark_version=None, driver_memory="2gib",
        on_finish_action="keep_pod",
    )  # fmt: skip
    operator.execute(context())
    (pod,) = cluster.pods.values()
    assert pod["spec"]["containers"][0]["resources"]["limits"]["memory"] == "2432Mi"


def test_dry_run_logs_every_object_with_secrets_redacted_and_sends_nothing(cluster, capfd):
    operator = make_operator(
        dry_run=True,
        conf={"spark.hadoop.fs.s3a.secret.key": SECRET},
        env_vars={"API_TOKEN": SECRET},
    )
    result = operator.execute(context())
    assert cluster.requests == []
    assert result["dry_run"] is True
    assert result["objects"][0].startswith("Pod/spark-pi-")
    assert {o.split("/")[0] for o in result["objects"]} == {"Pod", "Service", "ConfigMap"}
    text = "".join(capfd.readouterr())
    assert "kind: Pod" in text and "kind: ConfigMap" in text and "spark.properties" in text
    assert SECRET not in text
    assert "spark.hadoop.fs.s3a.secret.key=*********(redacted)" in text


def test_spark_submit_operator_parameters_without_a_role_are_named_once(cluster, capfd):
    operator = make_operator(dry_run=True, conn_id="spark_default", spark_binary="spark3-submit")
    operator.execute(context())
    text = "".join(capfd.readouterr())
    assert text.count("Ignoring conn_id='spark_default', spark_binary='spark3-submit'") == 1
    assert "kubernetes_conn_id=" in text
    make_operator(dry_run=True).execute(context())
    assert "Ignoring" not in "".join(capfd.readouterr())


def test_first_submission_runs_to_success_in_the_worker(cluster):
    cluster.on_list = progress(
        driver_status("running"), driver_status("running"), driver_status("finished")
    )
    ti = FakeTaskInstance()
    result = make_operator(on_finish_action="delete_pod").execute(context(ti))
    # list (adopt?) then the create, then owned objects by server-side apply
    assert cluster.requests[0] == ("GET", "/api/v1/namespaces/team-a/pods")
    assert len(posts(cluster)) == 1
    assert {a["method"] for a in cluster.applied} == {"PATCH"}
    assert result["state"] == "succeeded" and result["status"] == "success"
    assert result["exit_code"] == 0
    assert result["namespace"] == "team-a"
    assert result["driver_pod"].endswith("-1-driver")
    assert result["submission_id"] == f"team-a:{result['driver_pod']}"
    assert result["application_id"].startswith("spark-")
    assert result["adopted"] is False
    assert result["duration_seconds"] is not None
    assert ti.xcom[APPLICATION_XCOM_KEY]["state"] == "succeeded"
    assert cluster.pods == {}  # delete_pod


def test_a_live_driver_of_the_task_instance_is_adopted_not_submitted_again(cluster):
    existing_driver(cluster, 1, driver_status("running"))
    cluster.on_list = progress(
        driver_status("running"), driver_status("running"), driver_status("finished")
    )
    result = make_operator(on_finish_action="keep_pod").execute(
        context(FakeTaskInstance(try_number=2))
    )
    assert posts(cluster) == []
    assert result["adopted"] is True
    assert result["application_id"] == "spark-old1"
    # Marked as try 2's, so try 1's late kill leaves it alone (application/task/ownership.py).
    (adopted,) = cluster.pods.values()
    assert adopted["metadata"]["annotations"][ADOPTED_BY_TRY_ANNOTATION] == "2"


def test_a_cleared_try_deletes_the_earlier_clears_live_driver_and_submits_afresh(cluster):
    """Issue 29: the DAG run was cleared (clear number 0 -> 1) while try 1's driver ran."""
    ti1 = FakeTaskInstance(try_number=1)
    ref = TaskInstanceRef(ti1.dag_id, ti1.task_id, ti1.run_id, ti1.map_index, 1, 0)
    old = existing_driver(cluster, 1, driver_status("running"), ref=ref)
    cluster.on_list = progress(driver_status("finished"), only="-2-driver")

    class ClearedRun:
        clear_number = 1

    result = make_operator().execute(
        {"ti": FakeTaskInstance(try_number=2), "dag_run": ClearedRun()}
    )
    assert ("DELETE", f"/api/v1/namespaces/team-a/pods/{old['metadata']['name']}") in (
        cluster.requests
    )
    assert len(posts(cluster)) == 1 and result["adopted"] is False
    assert result["driver_pod"].endswith("-2-driver")


def test_a_retry_after_a_finished_attempt_submits_anew_under_the_next_number(cluster):
    existing_driver(cluster, 1, driver_status("finished", exit_code=1))
    cluster.on_list = progress(driver_status("finished"), only="-2-driver")
    result = make_operator(on_finish_action="keep_pod").execute(
        context(FakeTaskInstance(try_number=2))
    )
    assert len(posts(cluster)) == 1
    assert result["driver_pod"].endswith("-2-driver")
    assert len(cluster.pods) == 2  # the failed first attempt is still kept


def test_a_409_on_create_means_another_worker_won_so_its_driver_is_adopted(cluster):
    def other_worker_wins(cluster: FakeCluster, pod: dict) -> None:
        cluster.before_create = None
        # The other worker rendered its own submission: same pod name, its own app id.
        labels = {**pod["metadata"]["labels"], "spark-app-selector": "spark-other-worker"}
        metadata = {**pod["metadata"], "namespace": "team-a", "labels": labels}
        cluster.add_pod({**pod, "metadata": metadata, "status": driver_status("running")})

    cluster.before_create = other_worker_wins
    cluster.on_list = progress(driver_status("running"), driver_status("finished"))
    result = make_operator(on_finish_action="keep_pod").execute(context())
    assert len(posts(cluster)) == 1  # ours, refused with 409
    assert result["adopted"] is True
    assert [name for _, name in cluster.pods] == [result["driver_pod"]]
    assert cluster.applied == []  # our Service and ConfigMap were never sent


def test_a_409_against_a_finished_pod_with_a_fixed_name_is_a_clear_error(cluster):
    cluster.add_pod(
        {
            "metadata": {"name": "fixed-driver", "namespace": "team-a", "labels": {}},
            "status": driver_status("finished"),
        }
    )
    with pytest.raises(SubmissionError, match="already exists and has finished"):
        make_operator(conf={"spark.kubernetes.driver.pod.name": "fixed-driver"}).execute(context())


def test_a_failed_driver_fails_the_task_with_reason_exit_code_and_message(cluster):
    cluster.on_list = progress(
        driver_status("running"),
        driver_status("finished", exit_code=137, reason="OOMKilled", message="out of memory"),
    )
    ti = FakeTaskInstance()
    with pytest.raises(ApplicationFailed) as error:
        make_operator(on_finish_action="delete_succeeded_pod").execute(context(ti))
    message = str(error.value)
    assert "OOMKilled" in message and "exit code 137" in message and "out of memory" in message
    assert ti.xcom[APPLICATION_XCOM_KEY]["exit_code"] == 137
    assert ti.xcom[APPLICATION_XCOM_KEY]["status"] == "failed"
    assert len(cluster.pods) == 1  # kept on failure


@pytest.mark.parametrize(
    ("action", "exit_code", "kept"),
    [
        ("delete_pod", 0, False),
        ("delete_pod", 1, False),
        ("delete_succeeded_pod", 0, False),
        ("delete_succeeded_pod", 1, True),
        ("keep_pod", 0, True),
        ("keep_pod", 1, True),
    ],
)
def test_cleanup_follows_on_finish_action(cluster, action, exit_code, kept):
    cluster.on_list = progress(driver_status("finished", exit_code=exit_code))
    try:
        make_operator(on_finish_action=action).execute(context())
    except ApplicationFailed:
        assert exit_code != 0
    assert bool(cluster.pods) is kept


@pytest.mark.parametrize(
    ("status", "reason"), [("unschedulable", "Unschedulable"), ("image_pull", "ImagePullBackOff")]
)
def test_a_driver_that_never_starts_hits_the_startup_timeout_and_is_removed(
    cluster, status, reason
):
    cluster.on_list = progress(*[driver_status(status)] * 1000)
    with pytest.raises(ApplicationFailed) as error:
        make_operator(startup_timeout=0.3, on_finish_action="keep_pod").execute(context())
    assert "StartupTimeout" in str(error.value) and reason in str(error.value)
    assert cluster.pods == {}  # a timed-out driver is deleted even with keep_pod


def test_a_missing_image_fails_at_once_as_a_configuration_error_and_the_driver_goes(cluster):
    cluster.on_list = progress(driver_status("image_missing"), *[driver_status("running")] * 10)
    ti = FakeTaskInstance()
    started = time.monotonic()
    with pytest.raises(ConfigurationError) as error:
        make_operator(startup_timeout=600, on_finish_action="keep_pod").execute(context(ti))
    assert time.monotonic() - started < 30  # not the startup timeout's 600 s
    message = str(error.value)
    assert message.startswith("[configuration_error] ")
    assert 'ImageNotFound: image "apache/spark:3.5.99"' in message
    # Before Airflow 3.3 (no retry policy) the same error says it is not retried.
    answer = "docker.io/apache/spark:3.5.99: not found"
    assert message.endswith((answer, f"{answer} (configuration error: not retried)")), message
    assert error.value.reason == "ImageNotFound"
    assert ti.xcom[APPLICATION_XCOM_KEY]["reason"] == "configuration_error"
    assert cluster.pods == {}  # deleted even with keep_pod: its kubelet would pull forever


def test_the_run_timeout_ends_a_running_application(cluster):
    cluster.on_list = progress(*[driver_status("running")] * 1000)
    with pytest.raises(ApplicationFailed, match="RunTimeout"):
        make_operator(run_timeout=0.3).execute(context())
    assert cluster.pods == {}


def test_deferrable_mode_hands_ids_not_secrets_to_the_trigger_and_completes_from_its_event(cluster):
    cluster.hook.extra = {"token": SECRET}  # type: ignore[attr-defined]
    ti = FakeTaskInstance()
    operator = make_operator(deferrable=True, startup_timeout=60, run_timeout=600)
    with pytest.raises(TaskDeferred) as deferred:
        operator.execute(context(ti))
    classpath, kwargs = deferred.value.trigger.serialize()
    assert classpath.endswith("SparkK8sApplicationTrigger")
    assert SECRET not in repr(kwargs) and SECRET not in repr(deferred.value.kwargs)
    pod_name = kwargs["driver_pod_name"]
    assert kwargs["namespace"] == "team-a" and pod_name.endswith("-1-driver")
    assert kwargs["startup_timeout"] == 60 and kwargs["run_timeout"] == 600
    assert deferred.value.method_name == "execute_complete"
    event = {
        "status": "success", "application_id": kwargs["application_id"], "namespace": "team-a",
        "state": "succeeded", "reason": "Completed", "exit_code": 0, "driver_pod": pod_name,
        "executors": {"counts": {"succeeded": 2}, "failures": []}, "finished_at": None,
    }  # fmt: skip
    # dag.test() resumes with the event only: the application comes back from XCom.
    result = operator.execute_complete(context(ti), event)
    assert result["executors"]["counts"] == {"succeeded": 2}
    assert result["driver_pod"] == pod_name


def test_a_queue_timeout_from_the_conf_reaches_the_trigger_and_its_end_is_infrastructure(cluster):
    kueue_conf = {
        "spark.kubernetes.kueue.queueName": "team-queue",
        "spark.kubernetes.kueue.queueTimeout": "15min",
        "spark.executor.instances": "1",
    }
    ti = FakeTaskInstance()
    operator = make_operator(deferrable=True, conf=kueue_conf)
    with pytest.raises(TaskDeferred) as deferred:
        operator.execute(context(ti))
    _, kwargs = deferred.value.trigger.serialize()
    assert kwargs["queue_timeout"] == 900.0
    assert cluster.pods  # the driver, queued
    event = {
        "status": "timeout", "application_id": kwargs["application_id"], "namespace": "team-a",
        "state": "failed", "reason": "QueueTimeout", "driver_pod": kwargs["driver_pod_name"],
        "message": "the application stayed queued in Kueue for more than 900s (queued in "
        "ClusterQueue cq: insufficient unused quota)",
        "exit_code": None, "executors": {"counts": {}, "failures": []}, "queued_seconds": 900.0,
    }  # fmt: skip
    with pytest.raises(InfrastructureFailure, match=r"QueueTimeout.*ClusterQueue cq") as failed:
        operator.execute_complete(context(ti), event)
    assert failed.value.reason == "QueueTimeout"  # SparkK8sRetryPolicy retries it after its delay
    assert cluster.pods == {}  # the driver is deleted (its Workload goes with it)
    assert ti.xcom["spark_application"]["queued_seconds"] == 900.0


def test_a_queue_timeout_without_a_queue_is_refused_before_any_request(cluster):
    operator = make_operator(conf={"spark.kubernetes.kueue.queueTimeout": "15min"})
    with pytest.raises(AirflowFailException, match=re.escape("queueName is not set")):
        operator.execute(context())
    assert cluster.requests == []


def test_on_kill_while_waiting_in_the_worker_deletes_the_driver_and_stops_waiting(cluster):
    cluster.on_list = progress(*[driver_status("running")] * 100000)
    operator = make_operator()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            operator.execute(context())
        except BaseException as error:  # noqa: BLE001 - the thread reports what ended it
            errors.append(error)

    worker = threading.Thread(target=run)
    worker.start()
    # Under load the first submission can take seconds (it failed at 2 s once): a deadline.
    wait_for(lambda: cluster.pods and operator._tracked is not None, 30, "the driver submitted")
    operator.on_kill()
    worker.join(30)
    assert not worker.is_alive()
    assert cluster.pods == {}
    assert errors and isinstance(errors[0], ApplicationFailed) and "killed" in str(errors[0])


def test_with_reattach_off_the_live_driver_is_replaced(cluster):
    old = existing_driver(cluster, 1, driver_status("running"))
    cluster.on_list = progress(driver_status("finished"), only="-2-driver")
    result = make_operator(reattach_on_restart=False).execute(context())
    assert old["metadata"]["name"] not in {name for _, name in cluster.pods}
    assert result["driver_pod"].endswith("-2-driver") and result["adopted"] is False


def test_link_urls_are_pushed_when_the_connection_names_templates(cluster):
    cluster.hook.extra = {"spark_ui_url_template": "https://spark/{namespace}/{driver_pod}"}  # type: ignore[attr-defined]
    cluster.on_list = progress(driver_status("finished"))
    ti = FakeTaskInstance()
    result = make_operator().execute(context(ti))
    assert ti.xcom[SparkUiLink().xcom_key] == f"https://spark/team-a/{result['driver_pod']}"
    assert DriverPodLink().xcom_key not in ti.xcom


def test_airflow_stores_only_the_links_a_run_has_urls_for(cluster):
    """Airflow stores `get_link` of every listed link when the task stops: listing a link
    without a URL stored "" and first read a missing XCom (an error line in the task log)."""
    operator = make_operator()
    assert operator.operator_extra_links == (SparkUiLink(), DriverPodLink())  # the UI's buttons
    cluster.hook.extra = {"spark_ui_url_template": "https://spark/{driver_pod}"}  # type: ignore[attr-defined]
    cluster.on_list = progress(driver_status("finished"))
    result = operator.execute(context())
    (link,) = operator.operator_extra_links
    assert link.get_link(operator, ti_key=None) == f"https://spark/{result['driver_pod']}"
    dry = make_operator(dry_run=True)
    dry.execute(context())
    assert dry.operator_extra_links == ()


def test_a_resumed_operator_knows_its_link_urls_again(cluster):
    cluster.hook.extra = {"driver_pod_url_template": "https://k8s/{namespace}/{driver_pod}"}  # type: ignore[attr-defined]
    pod = existing_driver(cluster, 1, driver_status("finished"))
    app = tracked_from_pod(pod, adopted=False).to_kwargs()
    operator = make_operator(deferrable=True)  # a new process: nothing in memory
    operator.execute_complete(context(), application=app)
    (link,) = operator.operator_extra_links
    assert link.get_link(operator, ti_key=None) == f"https://k8s/team-a/{pod['metadata']['name']}"


def test_mapped_task_instances_get_distinct_drivers(cluster):
    cluster.on_list = progress(driver_status("finished"))
    first = make_operator(on_finish_action="keep_pod").execute(
        context(FakeTaskInstance(map_index=0))
    )
    cluster.on_list = lambda c: [
        p.update(status=driver_status("finished")) for p in c.pods.values()
    ]
    second = make_operator(on_finish_action="keep_pod").execute(
        context(FakeTaskInstance(map_index=1))
    )
    assert first["driver_pod"] != second["driver_pod"]
    assert len(posts(cluster)) == 2


def test_a_spark_submit_operator_task_moves_over_by_adding_an_image(cluster):
    # A SparkSubmitOperator task as written for it, with every parameter it takes that has a
    # meaning on Kubernetes; only the import and `image` changed.
    operator = SparkK8sSubmitOperator(
        task_id="legacy",
        application="local:///opt/app/job.py",
        conf={"spark.sql.shuffle.partitions": "8"},
        conn_id="spark_default",
        files="local:///opt/app/settings.json",
        py_files="local:///opt/app/lib.zip",
        archives="local:///opt/app/env.tar.gz#env",
        driver_class_path="/opt/extra/*",
        jars="local:///opt/app/udf.jar",
        executor_cores=2,
        executor_memory="2g",
        driver_memory="1g",
        proxy_user=None,
        name="legacy-job",
        num_executors=3,
        status_poll_interval=0.01,
        application_args=["--day", "2026-11-29"],
        env_vars={"MODE": "batch"},
        verbose=False,
        spark_binary="spark-submit",
        properties_file=None,
        yarn_queue=None,
        deploy_mode="cluster",
        image="apache/spark-py:4.0.1",
        spark_version="4.0.1",
        deferrable=False,
        startup_timeout=10,
        on_finish_action="keep_pod",
    )
    cluster.on_list = progress(driver_status("finished"))
    result = operator.execute(context(FakeTaskInstance(task_id="legacy")))
    assert result["state"] == "succeeded" and result["driver_pod"].startswith("legacy-job-")
    pod = next(iter(cluster.pods.values()))
    args = pod["spec"]["containers"][-1]["args"]
    assert args[-3:] == ["local:///opt/app/job.py", "--day", "2026-11-29"]
    env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][-1]["env"]}
    assert env["MODE"] == "batch"
    properties = next(a["content"] for a in cluster.applied if "configmaps" in a["path"]).decode()
    for expected in ("spark.executor.instances=3", "spark.executor.memory=2g", "spark.executor.cores=2",
                     "spark.driver.extraClassPath=/opt/extra/*", "spark.sql.shuffle.partitions=8",
                     "spark.app.name=legacy-job"):  # fmt: skip
        assert expected in properties, expected


def test_packages_reach_the_driver_unresolved(cluster):
    cluster.on_list = progress(driver_status("finished"))
    make_operator(
        packages="org.apache.spark:spark-avro_2.13:4.0.1",
        exclude_packages="com.example:unwanted",
        repositories="https://repo.example.com/m2",
    ).execute(context())
    applied = next(a["content"] for a in cluster.applied if "configmaps" in a["path"])
    properties = load_java_properties(json.loads(applied)["data"]["spark.properties"])
    assert properties["spark.jars.packages"] == "org.apache.spark:spark-avro_2.13:4.0.1"
    assert properties["spark.jars.excludes"] == "com.example:unwanted"
    assert properties["spark.jars.repositories"] == "https://repo.example.com/m2"


def test_bad_package_coordinate_is_refused_before_any_request(cluster):
    with pytest.raises(AirflowFailException) as error:
        make_operator(packages="org.apache.spark:spark-avro_2.13").execute(context())
    assert error.value.__cause__.key == "spark.jars.packages"
    assert cluster.requests == []


def test_dry_run_honours_the_users_redaction_regex(cluster, capfd):
    conf = {"spark.redaction.regex": "(?i)internal", "spark.internal.endpoint": SECRET}
    make_operator(dry_run=True, conf=conf).execute(context())
    text = "".join(capfd.readouterr())
    assert "spark.internal.endpoint=*********(redacted)" in text
    assert SECRET not in text


def test_the_image_tag_gives_the_spark_line_in_the_log_and_the_xcom(cluster, capfd):
    result = make_operator(dry_run=True, image="apache/spark:3.5.1", spark_version=None).execute(
        context()
    )
    assert result["spark_version"] == "3.5.1"
    assert {o.split("/")[0] for o in result["objects"]} == {"Pod", "Service", "ConfigMap"}
    text = "".join(capfd.readouterr())
    assert "The objects follow Spark 3.5.1 (from the image tag of apache/spark:3.5.1)" in text
    silent = make_operator(dry_run=True, image="registry.local/etl:7", spark_version=None)
    assert silent.execute(context())["spark_version"] == "4.3.0"
    text = "".join(capfd.readouterr())
    assert "does not say its Spark release" in text and 'spark_version="X.Y.Z"' in text


def test_the_spark_line_is_in_the_final_xcom(cluster):
    cluster.on_list = progress(driver_status("finished"))
    result = make_operator(image="apache/spark:4.1.2", spark_version=None).execute(context())
    assert result["spark_version"] == "4.1.2"


def test_resumed_without_the_event_a_finished_driver_is_reported(cluster):
    """Airflow resumes with the deferral's kwargs but no event (the process that ran the
    trigger died): the driver is looked up by the application and its end reported."""
    pod = existing_driver(cluster, 1, driver_status("finished", exit_code=3, reason="Error"))
    app = tracked_from_pod(pod, adopted=False).to_kwargs()
    with pytest.raises(ApplicationFailed, match="exit code 3"):
        make_operator(deferrable=True).execute_complete(context(), application=app)
    assert posts(cluster) == []


def test_resumed_without_the_event_a_live_driver_is_followed_again(cluster):
    existing_driver(cluster, 1, driver_status("running"))
    ti = FakeTaskInstance()
    # No application kwargs and no XCom either: found by the task instance's identity.
    with pytest.raises(TaskDeferred) as deferred:
        make_operator(deferrable=True).execute_complete(context(ti), event={"partial": True})
    assert deferred.value.kwargs["application"]["adopted"] is True
    assert ti.xcom[APPLICATION_XCOM_KEY]["driver_pod"].endswith("-1-driver")
    assert posts(cluster) == []  # never a second driver


def test_an_earlier_tries_event_does_not_end_this_application(cluster):
    """Issue 29: a cleared try deleted the old driver before the triggerer cancelled the old
    trigger, which then fired its application's failure into this try's resume."""
    pod = existing_driver(cluster, 1, driver_status("running"))
    app = tracked_from_pod(pod, adopted=False).to_kwargs()
    old = {"status": "failed", "state": "failed", "application_id": "spark-old-try"}
    with pytest.raises(TaskDeferred) as deferred:  # its own application: followed again
        make_operator(deferrable=True).execute_complete(context(), event=old, application=app)
    assert deferred.value.kwargs["application"]["application_id"] == app["application_id"]
    assert posts(cluster) == []


def test_resumed_without_the_event_in_the_worker_waits_for_the_driver(cluster):
    existing_driver(cluster, 1, driver_status("running"))
    cluster.on_list = progress(driver_status("finished"))
    result = make_operator(deferrable=False).execute_complete(context(), event=None)
    assert (result["status"], result["adopted"]) == ("success", True)
    assert posts(cluster) == []


def test_resumed_without_the_event_and_without_a_driver_fails_saying_why(cluster):
    with pytest.raises(ApplicationFailed, match="no driver pod to adopt or report on"):
        make_operator(deferrable=True).execute_complete(context(), event=None)


def test_the_cost_goes_to_the_xcom_one_log_line_and_an_openlineage_run_facet(cluster, capfd):
    ti = FakeTaskInstance()
    operator = make_operator(deferrable=True, startup_timeout=60)
    with pytest.raises(TaskDeferred) as deferred:
        operator.execute(context(ti))
    _, kwargs = deferred.value.trigger.serialize()
    cost = {
        "core_seconds": 248.0, "gib_seconds": 289.5, "gpu_seconds": 41.0,
        "pending_seconds": 4.0, "peak_executors": 2, "executor_pods": 3,
        "driver": {"core_seconds": 96.0, "gib_seconds": 96.0, "gpu_seconds": 0.0,
                   "pending_seconds": 4.0, "pods": 1},
        "executors": {"core_seconds": 152.0, "gib_seconds": 193.5, "gpu_seconds": 41.0,
                      "pending_seconds": 8.0, "pods": 3},
    }  # fmt: skip
    event = {
        "status": "success", "application_id": kwargs["application_id"], "namespace": "team-a",
        "state": "succeeded", "reason": "Completed", "exit_code": 0,
        "driver_pod": kwargs["driver_pod_name"], "finished_at": None,
        "executors": {"counts": {"deleted": 3}, "failures": []}, "cost": cost,
    }  # fmt: skip
    capfd.readouterr()
    result = operator.execute_complete(context(ti), event)
    assert result["cost"] == cost and ti.xcom[APPLICATION_XCOM_KEY]["cost"] == cost
    lines = [line for line in "".join(capfd.readouterr()).splitlines() if "cost: " in line]
    assert len(lines) == 1, lines
    assert (
        "cost: 248 core-seconds, 289.5 GiB-seconds, 41 GPU-seconds; peak 2 executors "
        "(3 executor pods); driver pending 4 s"
    ) in lines[0]
    lineage = operator.get_openlineage_facets_on_complete(None)
    if openlineage_lineage() is None:  # the compat venv has no OpenLineage: nothing, no error
        assert lineage is None
        return
    from openlineage.client.serde import Serde

    facet = Serde.to_dict(lineage.run_facets["sparkk8s_cost"])
    assert {k: v for k, v in facet.items() if not k.startswith("_")} == {
        "coreSeconds": 248.0, "gibSeconds": 289.5, "gpuSeconds": 41.0, "pendingSeconds": 4.0,
        "peakExecutors": 2, "executorPods": 3, "driver": cost["driver"],
        "executors": cost["executors"],
    }  # fmt: skip
    assert facet["_schemaURL"].endswith("#/$defs/RunFacet")
    # Without a cost (an event of an older trigger) there is no facet and no line.
    assert make_operator().get_openlineage_facets_on_failure(None) is None


def _submitted_properties(cluster: FakeCluster) -> dict[str, str]:
    (config_map,) = [
        json.loads(a["content"]) for a in cluster.applied if "/configmaps/" in a["path"]
    ]
    return load_java_properties(config_map["data"]["spark.properties"])


def test_the_spark_ui_goes_through_airflow_by_default_and_the_users_proxy_base_wins(cluster):
    """The operator (not the CLI) routes the UI's links under the task instance's path,
    publishes where the driver's UI is, and links it; a user's spark.ui.proxyBase wins."""
    cluster.on_list = progress(driver_status("finished"))
    ti = FakeTaskInstance(run_id="manual__2026-12-02T01:00:00+00:00")
    operator = make_operator(conf={"spark.ui.port": "4050"})
    result = operator.execute(context(ti))
    base = "/sparkk8s/ui/etl/manual__2026-12-02T01:00:00+00:00/spark_pi/-1"
    properties = _submitted_properties(cluster)
    assert properties["spark.ui.proxyBase"] == base
    assert ti.xcom["spark_ui"] == {
        "conn_id": "spark_k8s_default",
        "namespace": "team-a",
        "driver_pod": result["driver_pod"],
        "port": 4050,
    }
    assert ti.xcom[SparkUiLink().xcom_key] == base + "/"

    cluster.applied.clear()
    cluster.on_list = progress(driver_status("finished"))
    own = FakeTaskInstance(run_id="manual__2")
    make_operator(conf={"spark.ui.proxyBase": "/mine"}).execute(context(own))
    properties = _submitted_properties(cluster)
    assert properties["spark.ui.proxyBase"] == "/mine"
    assert "spark_ui" not in own.xcom and SparkUiLink().xcom_key not in own.xcom


def test_spark_ui_proxy_off_leaves_the_conf_as_spark_submit_would(cluster):
    cluster.on_list = progress(driver_status("finished"))
    ti = FakeTaskInstance()
    make_operator(spark_ui_proxy=False).execute(context(ti))
    properties = _submitted_properties(cluster)
    assert "spark.ui.proxyBase" not in properties
    assert "spark_ui" not in ti.xcom


def test_a_spark_ui_url_template_keeps_the_uis_links_as_spark_makes_them(cluster):
    """A deployment that routes the UI itself (an ingress named by the connection's
    template) gets no proxyBase: its links would otherwise point under Airflow."""
    cluster.hook.extra = {"spark_ui_url_template": "https://spark/{driver_pod}"}  # type: ignore[attr-defined]
    cluster.on_list = progress(driver_status("finished"))
    ti = FakeTaskInstance()
    result = make_operator().execute(context(ti))
    assert "spark.ui.proxyBase" not in _submitted_properties(cluster)
    assert "spark_ui" not in ti.xcom
    assert ti.xcom[SparkUiLink().xcom_key] == f"https://spark/{result['driver_pod']}"


def test_the_event_log_goes_where_the_operator_or_the_connection_says(cluster, monkeypatch):
    """The operator's event_log_dir wins over the connection's extra; the user's
    spark.eventLog.* keys win over both; the CLI path adds nothing (tests/parity)."""
    cluster.hook.extra = {  # type: ignore[attr-defined]
        "event_log_dir": "s3a://platform/events",
        "event_log_rolling_max_file_size": "64m",
    }
    cluster.on_list = progress(driver_status("finished"))
    make_operator().execute(context(FakeTaskInstance(run_id="r1")))
    properties = _submitted_properties(cluster)
    assert properties["spark.eventLog.enabled"] == "true"
    assert properties["spark.eventLog.dir"] == "s3a://platform/events"
    assert properties["spark.eventLog.rolling.maxFileSize"] == "64m"

    cluster.applied.clear()
    cluster.on_list = progress(driver_status("finished"))
    make_operator(
        event_log_dir="file:/shared/mine", conf={"spark.eventLog.rolling.enabled": "false"}
    ).execute(context(FakeTaskInstance(run_id="r2")))
    properties = _submitted_properties(cluster)
    assert properties["spark.eventLog.dir"] == "file:/shared/mine"
    assert properties["spark.eventLog.rolling.enabled"] == "false"
    assert "spark.eventLog.rolling.maxFileSize" not in properties


def test_a_relative_event_log_dir_fails_before_any_request(cluster):
    with pytest.raises(AirflowFailException, match="event_log_dir"):
        make_operator(event_log_dir="spark-events").execute(context())
    assert cluster.applied == []


def _summary_of(fetch_log: list[str]):  # type: ignore[no-untyped-def]
    """read_run_summary's stand-in: records the URL and application asked for."""
    from airflow_provider_sparkk8s.application.ui.run_summary import summarize

    def read(fetch, app_id):  # type: ignore[no-untyped-def]
        fetch_log.append(app_id)
        stages = [{"stageId": 0, "status": "COMPLETE", "numCompleteTasks": 4, "inputBytes": 5}]
        return summarize({"id": app_id}, [{"status": "SUCCEEDED"}], stages, [], None)

    return read


def test_the_run_summary_goes_to_the_log_and_the_xcom_when_a_history_server_is_set(
    cluster, monkeypatch, capfd
):
    from airflow_provider_sparkk8s.services.ui import history_server as module

    asked: list[str] = []
    urls: list[str] = []
    monkeypatch.setattr(module, "read_run_summary", _summary_of(asked))
    monkeypatch.setattr(module, "url_fetcher", lambda url: urls.append(url) or (lambda p: None))
    cluster.hook.extra = {  # type: ignore[attr-defined]
        "event_log_dir": "s3a://platform/events",
        "history_server_url": "http://history:18080",
    }
    cluster.on_list = progress(driver_status("running"), driver_status("finished"))
    ti = FakeTaskInstance()
    capfd.readouterr()
    result = make_operator().execute(context(ti))
    assert asked == [result["application_id"]] and urls == ["http://history:18080"]
    assert ti.xcom["run_summary"]["tasks"] == 4
    assert ti.xcom["run_summary"]["input_bytes"] == 5
    assert f"Run summary of {result['application_id']}" in "".join(capfd.readouterr())


def test_no_run_summary_without_an_event_log_or_a_server_and_a_failure_only_warns(
    cluster, monkeypatch, capfd
):
    from airflow_provider_sparkk8s.services.ui import history_server as module
    from airflow_provider_sparkk8s.services.ui.history_server import HistoryUnavailable

    asked: list[str] = []
    monkeypatch.setattr(module, "read_run_summary", _summary_of(asked))
    cluster.hook.extra = {"history_server_url": "http://history:18080"}  # type: ignore[attr-defined]
    cluster.on_list = progress(driver_status("running"), driver_status("finished"))
    ti = FakeTaskInstance()
    make_operator().execute(context(ti))  # no event log: nothing asked
    assert asked == [] and "run_summary" not in ti.xcom

    def unavailable(fetch, app_id):  # type: ignore[no-untyped-def]
        raise HistoryUnavailable(f"the History Server does not list application {app_id}")

    monkeypatch.setattr(module, "read_run_summary", unavailable)
    cluster.applied.clear()
    cluster.on_list = progress(driver_status("running"), driver_status("finished"))
    other = FakeTaskInstance(run_id="manual__2")
    capfd.readouterr()
    result = make_operator(event_log_dir="/shared/events").execute(context(other))
    assert result["state"] == "succeeded" and "run_summary" not in other.xcom
    assert "No run summary of" in "".join(capfd.readouterr())


# ---------------------------------------------------------------------- worker-free


def worker_end(kind: str, message: str = "driver failed") -> dict[str, Any]:
    return {
        "worker_free_end": True,
        "xcoms": {APPLICATION_XCOM_KEY: {"application_id": "spark-1", "reason": kind}},
        "failure": {"kind": kind, "message": message, "pod": "team-a:d", "exit_code": 1},
    }


# Worker-free tasks need Airflow 3.3 (rendering in the triggerer); before, the operator
# refuses the switch when the DAG is parsed, which the last test here checks there.
NEEDS_WORKER_FREE = pytest.mark.skipif(
    not START_FROM_TRIGGER_RENDERS, reason="worker-free tasks need Airflow 3.3"
)


def test_before_airflow_3_3_the_worker_free_switch_is_refused_naming_the_version():
    if START_FROM_TRIGGER_RENDERS:
        pytest.skip("this Airflow renders in the triggerer: the switch is accepted")
    with pytest.raises(SparkConfError, match=r"start_from_trigger.*Airflow 3\.[0-2]"):
        make_operator(start_from_trigger=True)


@NEEDS_WORKER_FREE
def test_a_worker_free_failure_handed_to_a_worker_fails_without_retry(cluster):
    ti = FakeTaskInstance()
    operator = make_operator(start_from_trigger=True)
    with pytest.raises(AirflowFailException) as caught:
        operator.execute_worker_free_end(context(ti), event=worker_end("application_error"))
    assert isinstance(caught.value, ApplicationFailed)  # still the typed outcome
    assert str(caught.value).startswith("[application_error] driver failed")
    assert ti.xcom[APPLICATION_XCOM_KEY]["reason"] == "application_error"
    with pytest.raises(AirflowFailException, match="invalid input: not retried"):
        operator.execute_worker_free_end(context(ti), event=worker_end("invalid_input"))
    with pytest.raises(AirflowFailException, match="without its end"):
        operator.execute_worker_free_end(context(ti), event={"status": "success"})
    assert cluster.requests == []


@NEEDS_WORKER_FREE
def test_a_worker_free_execution_timeout_finds_the_driver_by_its_labels(cluster):
    """No XCom names a worker-free task's driver before it ends: the timeout's resume finds
    it by the task instance's labels and deletes it."""
    existing_driver(cluster, 1, driver_status("running"))
    operator = make_operator(start_from_trigger=True)
    with pytest.raises(TaskDeferralTimeout, match="spark-old1"):
        operator.resume_execution("__fail__", {"error": "Trigger timeout"}, context())
    assert cluster.pods == {}
