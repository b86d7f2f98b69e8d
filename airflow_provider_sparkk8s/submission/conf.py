"""The driver's view of one submission: Spark conf plus everything the steps may read.

Steps are pure, so whatever Spark would read from the submitting machine (the
environment, the pod template file, HADOOP_CONF_DIR, the keytab) and whatever it
would draw at random (the application id, unique ids) is gathered by the shell
beforehand and handed in here as plain data.

Typed accessors (sizes, cores, booleans, prefixed maps) live in `conf_values.py`;
this module only holds the data and the derived names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

MainResourceKind = Literal["java", "python", "r"]


@dataclass(frozen=True)
class MainAppResource:
    """Spark's MainAppResource: JavaMainAppResource(Option[primary]), Python..., R..."""

    kind: MainResourceKind
    primary_resource: str | None  # None for a Java app without a jar (spark-internal only)


@dataclass(frozen=True)
class SubmissionIds:
    """Everything Spark draws at random or from the clock for one submission."""

    app_id: str  # "spark-" + 32 hex
    prefix_unique_id: str  # uniqueID used for the resource name prefix
    config_map_unique_id: str  # uniqueID of the spark-drv-<id>-conf-map
    service_unique_id: str  # uniqueID for the fallback Service name
    local_dir_uuids: tuple[str, ...] = ()  # UUIDs for default spark-local-dir paths
    properties_date: str = ""  # java.util.Date.toString() in the properties header
    shuffle_seed: int = 0  # seeds the random order Spark gives the local dirs
    upload_seed: int = 0  # seeds the spark-upload-<uuid> folder names (upload_plan.py)


@dataclass(frozen=True)
class LocalInputs:
    """What the submitting machine holds, read once by the shell."""

    environment: Mapping[str, str] = field(default_factory=dict)
    files: Mapping[str, bytes] = field(default_factory=dict)  # path -> content
    directories: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # dir -> file names
    spark_user: str = "root"  # SPARK_USER of the submitter, else the OS user


@dataclass(frozen=True)
class DriverConf:
    """Spark's KubernetesDriverConf, as plain data."""

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

    @property
    def version_tuple(self) -> tuple[int, int, int]:
        parts = ([*self.spark_version.split("-")[0].split("."), "0", "0"])[:3]
        return (int(parts[0]), int(parts[1]), int(parts[2]))
