"""Spark's DriverCommandFeatureStep: the container args (`driver ...`) and the Python env."""

from __future__ import annotations

import logging

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.conf import DriverConf
from airflow_provider_sparkk8s.submission.podops import add_to_list, editable, env_var
from airflow_provider_sparkk8s.submission.spec import FeatureStep, SparkPod, StepResult
from airflow_provider_sparkk8s.submission.upload_plan import plan_uploads
from airflow_provider_sparkk8s.submission.uris import NO_RESOURCE, is_local_dependency

SPARK_CLASS = "org.apache.spark.deploy.k8s.features.DriverCommandFeatureStep"
SINCE = (2, 3, 0)

SPARK_CONF_PATH = "/opt/spark/conf/spark.properties"
PYTHON_VERSION_KEY = "spark.kubernetes.pyspark.pythonVersion"
log = logging.getLogger(__name__)


def driver_args(conf: DriverConf, resource: str) -> list[str]:
    proxy = ["--proxy-user", conf.proxy_user] if conf.proxy_user is not None else []
    return [
        "driver",
        *proxy,
        "--properties-file",
        SPARK_CONF_PATH,
        "--class",
        conf.main_class,
        resource,
        *conf.app_args,
    ]


def python_env(conf: DriverConf) -> list[dict[str, str]]:
    """PYSPARK_PYTHON and PYSPARK_DRIVER_PYTHON: the conf first, then the submitter's env."""
    env = conf.local.environment
    python = _first(conf.get("spark.pyspark.python"), env.get("PYSPARK_PYTHON"))
    driver_python = _first(
        conf.get("spark.pyspark.driver.python"),
        conf.get("spark.pyspark.python"),
        env.get("PYSPARK_DRIVER_PYTHON"),
        env.get("PYSPARK_PYTHON"),
    )
    pairs = [("PYSPARK_PYTHON", python), ("PYSPARK_DRIVER_PYTHON", driver_python)]
    return [env_var(name, value) for name, value in pairs if value is not None]


def check_python_version(conf: DriverConf) -> None:
    """Before 4.0 the Python driver reads the deprecated PYTHON_VERSION_KEY, whose check
    allows only 3 (4.0 removed the key: any value passes through unread)."""
    value = conf.get(PYTHON_VERSION_KEY)
    if value is None or conf.version_tuple >= (4, 0, 0):
        return
    if value != "3":
        raise SparkConfError(
            PYTHON_VERSION_KEY, value, "3 (or the key left out)",
            "Python 2 was dropped from Spark 3.1, and only 3 is allowed in this "
            "configuration; set spark.pyspark.python and spark.pyspark.driver.python (or "
            "PYSPARK_PYTHON and PYSPARK_DRIVER_PYTHON) instead",
        )  # fmt: skip
    log.warning(
        "%s was deprecated in Spark 3.1. Please set 'spark.pyspark.python' and "
        "'spark.pyspark.driver.python' configurations or PYSPARK_PYTHON and "
        "PYSPARK_DRIVER_PYTHON environment variables instead.",
        PYTHON_VERSION_KEY,
    )


def _first(*values: str | None) -> str | None:
    # Spark chains Options: an empty string is a value, only an absent key falls through.
    return next((value for value in values if value is not None), None)


def main_resource(conf: DriverConf) -> str:
    resource = conf.main_app_resource
    primary = resource.primary_resource
    if resource.kind == "java":
        # A local jar reaches the driver through spark.jars, so the arg becomes spark-internal.
        return NO_RESOURCE if primary is None or is_local_dependency(primary) else primary
    if primary is None:
        raise SparkConfError(
            "main application resource",
            None,
            f"a {resource.kind} file for a {resource.kind} application",
        )
    if resource.kind == "python" and is_local_dependency(primary):
        uploaded = plan_uploads(conf).main_resource
        assert uploaded is not None  # the plan uploads every local Python main file
        return uploaded
    return primary


def step(conf: DriverConf, pod: SparkPod) -> StepResult:
    new_pod, container = editable(pod)
    add_to_list(container, ("args",), driver_args(conf, main_resource(conf)))
    if conf.main_app_resource.kind == "python":
        check_python_version(conf)
        add_to_list(container, ("env",), python_env(conf))
    return StepResult(
        pod=SparkPod(new_pod, container),
        system_properties={"spark.kubernetes.resource.type": conf.main_app_resource.kind},
    )


STEP = FeatureStep(SPARK_CLASS, SINCE, step)
