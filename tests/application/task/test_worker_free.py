"""What the worker-free mode refuses, on plain parameters: each refusal names the parameter,
its value and why."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_sparkk8s.application.task.worker_free import (
    check_plain,
    check_worker_free,
    refuse_airflow,
    refuse_poke_only,
    refuse_without_adoption,
)
from airflow_provider_sparkk8s.errors import SparkConfError

REMOTE: dict[str, Any] = {
    "application": "s3a://jobs/etl.py",
    "files": "gs://b/a.txt,local:///opt/x.conf",
    "py_files": ["abfss://c@acct.dfs.core.windows.net/lib.zip"],
    "jars": "local:///opt/spark/jars/x.jar",
    "archives": None,
    "conf": {"spark.jars": "https://repo/x.jar", "spark.executor.instances": "2"},
    "driver_pod_template": {"spec": {}},
}


def refusal(**changes: Any) -> SparkConfError:
    with pytest.raises(SparkConfError) as caught:
        check_worker_free({**REMOTE, **changes})
    return caught.value


def test_remote_uris_local_uris_and_dict_templates_pass() -> None:
    check_worker_free(REMOTE)


@pytest.mark.parametrize(
    ("name", "value", "entry"),
    [
        ("application", "jobs/etl.py", "jobs/etl.py"),
        ("application", "file:///dags/etl.py", "file:///dags/etl.py"),
        ("files", "s3a://b/ok.txt, data/lookup.csv", "data/lookup.csv"),
        ("py_files", ["s3a://b/a.zip", "/dags/lib.zip"], "/dags/lib.zip"),
        ("jars", "deps/x.jar", "deps/x.jar"),
        ("archives", "env.tar.gz#env", "env.tar.gz#env"),
    ],
)
def test_a_local_file_to_upload_is_refused_by_name(name: str, value: Any, entry: str) -> None:
    error = refusal(**{name: value})
    assert (error.key, error.value) == (name, entry)
    assert "start_from_trigger=True" in str(error) and "worker's disk" in str(error)


@pytest.mark.parametrize(
    "key",
    ["spark.jars", "spark.files", "spark.submit.pyFiles", "spark.archives",
     "spark.kubernetes.driver.podTemplateFile", "spark.kubernetes.executor.podTemplateFile"],
)  # fmt: skip
def test_a_local_file_in_conf_is_refused_by_its_key(key: str) -> None:
    error = refusal(conf={key: "/opt/airflow/dags/thing"})
    assert error.key == f"conf[{key!r}]"
    assert error.value == "/opt/airflow/dags/thing"


@pytest.mark.parametrize(
    "name", ["driver_pod_template", "executor_pod_template", "properties_file", "keytab"]
)
def test_files_read_from_disk_are_refused(name: str) -> None:
    error = refusal(**{name: "/opt/airflow/dags/thing.yaml"})
    assert (error.key, error.value) == (name, "/opt/airflow/dags/thing.yaml")
    assert "read from disk" in str(error)


def test_templated_values_wait_for_the_triggerer_to_render_them() -> None:
    check_worker_free({**REMOTE, "application": "{{ var.value.app }}", "keytab": "{{ x }}"})


def test_user_feature_steps_are_refused_and_sparks_own_pass() -> None:
    key = "spark.kubernetes.driver.pod.featureSteps"
    check_worker_free(
        {**REMOTE, "conf": {key: "org.apache.spark.deploy.k8s.features.VolcanoFeatureStep"}}
    )
    error = refusal(conf={key: "my_steps:add_sidecar"})
    assert (error.key, error.value) == (f"conf[{key!r}]", "my_steps:add_sidecar")
    assert "imported and run in the triggerer" in str(error)


def test_callables_and_objects_are_refused_where_they_sit() -> None:
    error = refusal(conf={"spark.x": len})
    assert error.key == "conf['spark.x']" and "callable" in str(error)
    error = refusal(application_args=["1", object()])
    assert error.key == "application_args[1]" and "JSON" in str(error)


def test_airflow_before_3_3_is_refused_naming_its_version() -> None:
    refuse_airflow("3.3.2", True)
    with pytest.raises(SparkConfError) as caught:
        refuse_airflow("3.2.1", False)
    assert caught.value.key == "start_from_trigger"
    assert "Airflow 3.2.1" in str(caught.value) and "3.3" in str(caught.value)


def test_a_trigger_that_runs_again_must_adopt_its_driver() -> None:
    refuse_without_adoption(True)
    with pytest.raises(SparkConfError, match="reattach_on_restart=False") as caught:
        refuse_without_adoption(False)
    assert "second one" in str(caught.value)


@pytest.mark.parametrize(
    ("name", "value", "why"),
    [
        ("mode", "reschedule", "reschedule mode"),
        ("exponential_backoff", True, "spaces the pokes"),
        ("max_wait", 600, "exponential_backoff"),
        ("silent_fail", True, "no poke runs"),
        ("never_fail", True, "poke's errors"),
    ],
)
def test_a_sensors_poke_settings_are_refused_by_name(name: str, value: Any, why: str) -> None:
    with pytest.raises(SparkConfError) as caught:
        refuse_poke_only({"mode": "poke", name: value})
    assert caught.value.key == name and why in str(caught.value)
    assert "start_from_trigger=True" in str(caught.value)


def test_a_sensors_defaults_pass() -> None:
    refuse_poke_only({"mode": "poke", "exponential_backoff": False, "max_wait": None})
    check_plain({"application_id": "spark-1", "timeout": 60.0, "execution_timeout": None})
    with pytest.raises(SparkConfError, match="callable"):
        check_plain({"label_selector": lambda: "job=x"})
