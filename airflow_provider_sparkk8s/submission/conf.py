"""The driver's view of one submission: Spark conf plus everything the steps may read.

Steps are pure, so whatever Spark would read from the submitting machine (the
environment, the pod template file, HADOOP_CONF_DIR, the keytab) and whatever it
would draw at random (the application id, unique ids: `naming.SubmissionIds`) is gathered
by the shell beforehand and handed in here as plain data.

`DriverConf` is also Spark's KubernetesDriverConf in that it computes, once, what several
steps derive from the conf: the resource-name prefix, the driver pod name, labels and
annotations, the volumes, and `prefixed(prefix)`, Spark's `getAllWithPrefix(prefix).toMap`
in Spark's iteration order. The rules live in `naming.py`, `volumes.py` and
`spark_order.py`, which never import this module: naming and volumes name what they read
of it in a Protocol (`NamingConf`, `VolumeConf`), so imports point one way.

Typed accessors (sizes, cores, booleans, lists) live in `conf_values.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from functools import cached_property
from types import MappingProxyType

from airflow_provider_sparkk8s.records import record
from airflow_provider_sparkk8s.submission import conf_values, naming, spark_order, volumes
from airflow_provider_sparkk8s.submission.naming import SubmissionIds

TYPE_CHECKING = False  # typing's, without importing typing (2 ms of the CLI's start)
if TYPE_CHECKING:
    from typing import Any, Literal, TypeAlias

MainResourceKind: TypeAlias = 'Literal["java", "python", "r"]'
# The main class spark-submit gives a Python or an R application (SparkSubmit.scala).
PYTHON_RUNNER = "org.apache.spark.deploy.PythonRunner"
R_RUNNER = "org.apache.spark.deploy.RRunner"


@record
class MainAppResource:
    """Spark's MainAppResource: JavaMainAppResource(Option[primary]), Python..., R..."""

    kind: MainResourceKind
    primary_resource: str | None  # None for a Java app without a jar (spark-internal only)


@record
class LocalInputs:
    """What the submitting machine holds, read once by the shell."""

    environment: Mapping[str, str] = field(default_factory=dict)
    files: Mapping[str, bytes] = field(default_factory=dict)  # path -> content
    directories: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # dir -> file names
    spark_user: str = "root"  # SPARK_USER of the submitter, else the OS user


@record
class DriverConf:
    """Spark's KubernetesDriverConf: plain data, and the values derived from it, each
    computed once (derived values are read-only; copy before changing one)."""

    spark_conf: Mapping[str, str]
    spark_version: str
    ids: SubmissionIds
    main_app_resource: MainAppResource
    main_class: str
    app_args: tuple[str, ...] = ()
    proxy_user: str | None = None
    local: LocalInputs = field(default_factory=LocalInputs)
    # Pod templates given as Python dicts (operator); a file path in the conf is read
    # by the shell into `local.files` instead. A dict wins over a path.
    driver_pod_template: Mapping[str, Any] | None = None
    executor_pod_template: Mapping[str, Any] | None = None

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.spark_conf.get(key, default)

    def contains(self, key: str) -> bool:
        return key in self.spark_conf

    @property
    def namespace(self) -> str:
        return self.spark_conf.get("spark.kubernetes.namespace", "default")

    @property
    def app_id(self) -> str:
        return self.ids.app_id

    @cached_property
    def version_tuple(self) -> tuple[int, int, int]:
        return conf_values.version_tuple(self.spark_version)

    @cached_property
    def resource_prefix(self) -> str:
        """The prefix of every object's name (`<app name>-<uniqueID>`, slugged)."""
        return naming.driver_resource_prefix(self)

    @cached_property
    def driver_pod_name(self) -> str:
        return naming.driver_pod_name(self)

    @cached_property
    def labels(self) -> Mapping[str, str]:
        """The driver's labels: the user's, then Spark's presets (the Service's selector)."""
        return MappingProxyType(naming.driver_labels(self))

    @cached_property
    def annotations(self) -> Mapping[str, str]:
        return MappingProxyType(naming.driver_annotations(self))

    @cached_property
    def volumes(self) -> tuple[volumes.VolumeSpec, ...]:
        """`spark.kubernetes.driver.volumes.*`, parsed and validated, in Spark's order."""
        return volumes.parse_volumes(self, volumes.DRIVER_PREFIX)

    def prefixed(self, prefix: str) -> dict[str, str]:
        """Spark's `getAllWithPrefix(prefix).toMap`: the entries under `prefix`, the prefix
        removed, in the order Spark iterates them (which fixes list orders in the pod)."""
        return spark_order.prefixed_in_order(
            self.spark_conf, self._spark_key_order, prefix, self._scala_213
        )

    @cached_property
    def _scala_213(self) -> bool:
        return self.version_tuple >= (4, 0, 0)  # Spark 4 is built on Scala 2.13, 3.5 on 2.12

    @cached_property
    def _spark_key_order(self) -> tuple[str, ...]:
        """Every key in the order of Spark's `SparkConf.getAll` for this conf."""
        return spark_order.get_all_order_of(tuple(self.spark_conf.items()), self._scala_213)
