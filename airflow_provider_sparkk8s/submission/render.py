"""Public face of the pipeline: `prepare()` a DriverConf, `render()` every object, `to_yaml()`.

Pure: the shell gathers `LocalInputs` (local_inputs.py) and draws `SubmissionIds`
(naming.new_submission_ids) first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.records import record
from airflow_provider_sparkk8s.submission import builder, kueue, naming
from airflow_provider_sparkk8s.submission.conf import (
    PYTHON_RUNNER,
    R_RUNNER,
    DriverConf,
    LocalInputs,
    MainAppResource,
)
from airflow_provider_sparkk8s.submission.conf_values import is_dns1123_label, is_dns1123_subdomain
from airflow_provider_sparkk8s.submission.java_text import java_file_name
from airflow_provider_sparkk8s.submission.naming import SubmissionIds
from airflow_provider_sparkk8s.submission.spark_line import (
    DEFAULT_SPARK_VERSION,
    check_spark_version,
)
from airflow_provider_sparkk8s.submission.spec import KubeObject

TYPE_CHECKING = False  # typing's, without importing typing (2 ms of the CLI's start)
if TYPE_CHECKING:
    from typing import Any


@record
class RenderedSubmission:
    """Every object of one submission, in the order spark-submit sends them."""

    app_id: str
    namespace: str
    driver_pod_name: str
    conf_map_name: str
    driver_pod: KubeObject
    pre_resources: tuple[KubeObject, ...]
    resources: tuple[KubeObject, ...]  # post-pod objects, the conf ConfigMap last
    system_properties: Mapping[str, str]
    # Secret-looking conf keys the conf ConfigMap holds in clear (warned about by the shell).
    secret_confs_in_clear: tuple[str, ...] = ()
    # spark-submit's POST body names the namespace only when the driver template had one
    # (fabric8 then rewrites it to the target namespace); otherwise it is only in the URL.
    pod_body_has_namespace: bool = False
    # Kueue admission (spark.kubernetes.kueue.queueName): the prebuilt Workload, sent first
    # and left to Kueue, which makes the driver pod its owner (submission/kueue.py).
    workload: KubeObject | None = None

    @property
    def submission_id(self) -> str:
        return naming.submission_id(self.namespace, self.driver_pod_name)

    @property
    def driver_pod_body(self) -> KubeObject:
        """The driver pod exactly as spark-submit POSTs it."""
        if self.pod_body_has_namespace:
            return self.driver_pod
        metadata = {k: v for k, v in self.driver_pod["metadata"].items() if k != "namespace"}
        return {**self.driver_pod, "metadata": metadata}

    @property
    def objects(self) -> list[KubeObject]:
        workload = [self.workload] if self.workload is not None else []
        return [*workload, *self.pre_resources, self.driver_pod, *self.resources]


def prepare(
    spark_conf: Mapping[str, str],
    *,
    spark_version: str = DEFAULT_SPARK_VERSION,
    main_app_resource: MainAppResource,
    main_class: str | None = None,
    app_args: Sequence[str] = (),
    proxy_user: str | None = None,
    local: LocalInputs | None = None,
    ids: SubmissionIds,
    driver_pod_template: Mapping[str, Any] | None = None,
    executor_pod_template: Mapping[str, Any] | None = None,
) -> DriverConf:
    """A DriverConf with the defaults spark-submit applies in cluster mode, checked up front."""
    check_spark_version(spark_version)
    for key, value in spark_conf.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise SparkConfError(str(key), value, "string keys and string values")
    primary = main_app_resource.primary_resource
    kind = main_app_resource.kind
    if kind not in ("java", "python", "r"):
        raise SparkConfError("main application resource", kind, "java, python or r")
    if kind == "python":
        main_class = PYTHON_RUNNER
    elif kind == "r":
        main_class = R_RUNNER
    if kind != "java" and not primary:
        raise SparkConfError("main application resource", primary, f"a {kind} file")
    if not main_class:
        raise SparkConfError("main_class", main_class, "the application's main class (--class)")
    conf = dict(spark_conf)
    deploy_mode = conf.setdefault("spark.submit.deployMode", "cluster")
    if deploy_mode != "cluster":
        raise SparkConfError("spark.submit.deployMode", deploy_mode, "cluster")
    # spark-submit drops the driver host in cluster mode; the Service step sets it.
    conf.pop("spark.driver.host", None)
    if "spark.app.name" not in conf:
        java_name = main_class if kind == "java" else None
        conf["spark.app.name"] = java_name or java_file_name(primary or "")
    _check_executor_prefix(conf.get("spark.kubernetes.executor.podNamePrefix"))
    namespace = conf.get("spark.kubernetes.namespace", "default")
    if not is_dns1123_label(namespace):
        raise SparkConfError(
            "spark.kubernetes.namespace", namespace, "a DNS-1123 label (lower-case, at most 63)"
        )
    return DriverConf(
        spark_conf=conf,
        spark_version=spark_version,
        ids=ids,
        main_app_resource=main_app_resource,
        main_class=main_class,
        app_args=tuple(app_args),
        proxy_user=proxy_user,
        local=local or LocalInputs(),
        driver_pod_template=driver_pod_template,
        executor_pod_template=executor_pod_template,
    )


def _check_executor_prefix(prefix: str | None) -> None:
    """Spark 3.5+ refuses (on the driver, too late) a prefix that cannot make pod names."""
    # 16 = the longest "-exec-<Int.MaxValue>" suffix.
    if prefix is not None and not (is_dns1123_subdomain(prefix) and len(prefix) + 16 <= 253):
        raise SparkConfError(
            "spark.kubernetes.executor.podNamePrefix",
            prefix,
            "a DNS-1123 subdomain of at most 237 characters",
        )


def _check_names(objects: Iterable[KubeObject], conf: DriverConf) -> None:
    for obj in objects:
        name = (obj.get("metadata") or {}).get("name")
        if not isinstance(name, str) or not is_dns1123_subdomain(name):
            raise SparkConfError(
                "spark.app.name",
                naming.app_name(conf),
                "a name that makes valid Kubernetes object names",
                f"{obj.get('kind')} name {name!r} is not a DNS-1123 subdomain",
            )


def render(conf: DriverConf) -> RenderedSubmission:
    """Every object spark-submit would send for `conf`, as plain dicts."""
    check_spark_version(conf.spark_version)
    queue = kueue.queue_name(conf.spark_conf)
    spec = builder.build_driver_spec(conf)
    if queue is not None:
        spec = kueue.admitted_driver(conf, spec, queue)
    assembled = builder.assemble(conf, spec)
    pod = dict(assembled.pod)
    template_namespace = "namespace" in (pod.get("metadata") or {})
    pod["metadata"] = {**pod.get("metadata", {}), "namespace": conf.namespace}
    resources = (*assembled.resources, assembled.conf_config_map)
    workload = (
        kueue.workload(conf, queue, pod, assembled.system_properties) if queue is not None else None
    )
    _check_names(
        [*([workload] if workload else []), *assembled.pre_resources, pod, *resources], conf
    )
    return RenderedSubmission(
        app_id=conf.app_id,
        namespace=conf.namespace,
        driver_pod_name=pod["metadata"]["name"],
        conf_map_name=assembled.conf_config_map["metadata"]["name"],
        driver_pod=pod,
        pre_resources=assembled.pre_resources,
        resources=resources,
        system_properties=assembled.system_properties,
        pod_body_has_namespace=template_namespace,
        secret_confs_in_clear=assembled.secret_confs_in_clear,
        workload=workload,
    )


def to_yaml(objects: Iterable[KubeObject]) -> str:
    """The objects as one YAML stream (documents separated by `---`), keys in given order.

    Multi-line strings (spark.properties) are written as block scalars, for reading.
    """
    import yaml  # only dry runs and people need YAML; submissions send JSON

    class BlockStrDumper(yaml.SafeDumper):  # type: ignore[misc]  # PyYAML has no stubs here
        pass

    def block_str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
        style = "|" if "\n" in value and not value.endswith((" ", "\t")) else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    BlockStrDumper.add_representer(str, block_str)
    return str(
        yaml.dump_all(
            list(objects), Dumper=BlockStrDumper, sort_keys=False, default_flow_style=False
        )
    )
