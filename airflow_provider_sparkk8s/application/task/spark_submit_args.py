"""The operator's SparkSubmitOperator-style parameters, as the spark-submit command they mean.

A task that moves from `SparkSubmitOperator` keeps its parameters. Rather than map each one
to Spark conf a second time, we write the spark-submit argument list that operator's hook
would run and hand it to `submission/command_line/arguments.py`, which parses it as spark-submit
does; the CLI goes through the same parser, so both paths agree on every flag.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import Any

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.records import record


@record
class SubmitParameters:
    """SparkSubmitOperator's parameter names, with the same meaning."""

    application: str = ""
    conf: Mapping[str, Any] = field(default_factory=dict)
    files: str | Sequence[str] | None = None
    py_files: str | Sequence[str] | None = None
    archives: str | Sequence[str] | None = None
    jars: str | Sequence[str] | None = None
    driver_class_path: str | None = None
    java_class: str | None = None
    packages: str | Sequence[str] | None = None
    exclude_packages: str | Sequence[str] | None = None
    repositories: str | Sequence[str] | None = None
    total_executor_cores: int | None = None
    executor_cores: int | str | None = None
    executor_memory: str | None = None
    driver_memory: str | None = None
    driver_cores: int | str | None = None
    keytab: str | None = None
    principal: str | None = None
    proxy_user: str | None = None
    name: str | None = None
    num_executors: int | str | None = None
    application_args: Sequence[Any] | None = None
    env_vars: Mapping[str, Any] | None = None
    verbose: bool = False
    properties_file: str | None = None
    deploy_mode: str | None = None


def comma_list(value: str | Sequence[str] | None) -> str | None:
    """SparkSubmitOperator takes comma-separated strings; we also take lists."""
    if value is None:
        return None
    if isinstance(value, str):
        return value.strip() or None
    items = [str(item).strip() for item in value if str(item).strip()]
    return ",".join(items) or None


def _conf_value(key: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None or isinstance(value, (dict, list, tuple, set)):
        raise SparkConfError(
            f"conf[{key!r}]", value, "a string, number or boolean (Spark conf values are strings)"
        )
    return str(value)


def spark_submit_argv(params: SubmitParameters) -> list[str]:
    """The arguments after `spark-submit`, in the order SparkSubmitOperator's hook writes them."""
    if params.deploy_mode not in (None, "cluster"):
        raise SparkConfError(
            "deploy_mode", params.deploy_mode, "'cluster' (the driver runs in a pod)"
        )
    if not params.application:
        raise SparkConfError(
            "application", params.application, "the main jar, .py or .R file of the application"
        )
    argv: list[str] = ["--deploy-mode", "cluster"]
    for key, value in params.conf.items():
        argv += ["--conf", f"{key}={_conf_value(key, value)}"]
    # On Kubernetes, SparkSubmitOperator's env_vars become the driver's environment.
    for key, value in (params.env_vars or {}).items():
        argv += ["--conf", f"spark.kubernetes.driverEnv.{key}={value}"]
    flags: list[tuple[str, Any]] = [
        ("--files", comma_list(params.files)),
        ("--py-files", comma_list(params.py_files)),
        ("--archives", comma_list(params.archives)),
        ("--driver-class-path", params.driver_class_path),
        ("--jars", comma_list(params.jars)),
        ("--packages", comma_list(params.packages)),
        ("--exclude-packages", comma_list(params.exclude_packages)),
        ("--repositories", comma_list(params.repositories)),
        ("--num-executors", params.num_executors),
        ("--total-executor-cores", params.total_executor_cores),
        ("--executor-cores", params.executor_cores),
        ("--executor-memory", params.executor_memory),
        ("--driver-memory", params.driver_memory),
        ("--driver-cores", params.driver_cores),
        ("--keytab", params.keytab),
        ("--principal", params.principal),
        ("--proxy-user", params.proxy_user),
        ("--name", params.name),
        ("--class", params.java_class),
        ("--properties-file", params.properties_file),
    ]
    for flag, value in flags:
        if value is not None and value != "":
            argv += [flag, str(value)]
    if params.verbose:
        argv.append("--verbose")
    argv.append(params.application)
    argv += [str(arg) for arg in params.application_args or ()]
    return argv
