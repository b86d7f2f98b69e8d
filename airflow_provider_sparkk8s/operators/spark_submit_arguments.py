"""SparkSubmitOperator's parameters, under their names and with their meaning: what
spark-submit itself reads (`SubmitParameters`' fields) and the few we accept but ignore or
refuse. `SparkK8sSubmitParameters` (spark_k8s_parameters.py) adds the operator's own.

Each is a keyword of this class's signature, so Airflow's `default_args`, `partial` and
`expand` see it; Airflow renders the templated ones in place, and `_submit_parameters`
hands them on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import Any

from airflow_provider_sparkk8s.application.task.spark_submit_args import SubmitParameters
from airflow_provider_sparkk8s.application.task.task_parameters import (
    Ignored,
    refuse_krb5ccache,
)
from airflow_provider_sparkk8s.operators.template_files import TemplateFiles


class SparkSubmitArguments(TemplateFiles):
    """SparkSubmitOperator's parameters; `SparkK8sSubmitOperator`'s docstring documents each."""

    def __init__(
        self,
        *,
        application: str = "",
        conf: Mapping[str, Any] | None = None,
        files: str | Sequence[str] | None = None,
        py_files: str | Sequence[str] | None = None,
        archives: str | Sequence[str] | None = None,
        jars: str | Sequence[str] | None = None,
        java_class: str | None = None,
        name: str | None = None,
        application_args: Sequence[Any] | None = None,
        driver_memory: str | None = None,
        driver_cores: int | str | None = None,
        executor_memory: str | None = None,
        executor_cores: int | str | None = None,
        num_executors: int | str | None = None,
        proxy_user: str | None = None,
        verbose: bool = False,
        driver_class_path: str | None = None,
        keytab: str | None = None,
        principal: str | None = None,
        env_vars: Mapping[str, Any] | None = None,
        properties_file: str | None = None,
        packages: str | None = None,
        exclude_packages: str | None = None,
        repositories: str | None = None,
        total_executor_cores: int | None = None,
        deploy_mode: str | None = None,
        conn_id: str | None = None,
        spark_binary: str | None = None,
        yarn_queue: str | None = None,
        use_krb5ccache: bool = False,
        **kwargs: Any,
    ) -> None:
        refuse_krb5ccache(use_krb5ccache)
        super().__init__(**kwargs)
        self.application = application
        self.conf: dict[str, Any] = dict(conf or {})
        self.files, self.py_files, self.archives, self.jars = files, py_files, archives, jars
        self.driver_class_path, self.java_class = driver_class_path, java_class
        self.packages, self.exclude_packages = packages, exclude_packages
        self.repositories, self.total_executor_cores = repositories, total_executor_cores
        self.executor_cores, self.executor_memory = executor_cores, executor_memory
        self.driver_memory, self.driver_cores = driver_memory, driver_cores
        self.keytab, self.principal, self.proxy_user = keytab, principal, proxy_user
        self.name, self.num_executors = name, num_executors
        self.application_args = list(application_args) if application_args is not None else None
        self.env_vars = dict(env_vars) if env_vars else None
        self.verbose, self.properties_file = verbose, properties_file
        self.deploy_mode = deploy_mode
        self.ignored = Ignored(conn_id, spark_binary, yarn_queue)

    def _submit_parameters(self, conf: Mapping[str, Any] | None = None) -> SubmitParameters:
        given = {field.name: getattr(self, field.name) for field in fields(SubmitParameters)}
        given["conf"] = self.conf if conf is None else conf
        # Without a name, the task id names the pods (spark-submit would use the class).
        given["name"] = self.name or self.task_id
        return SubmitParameters(**given)
