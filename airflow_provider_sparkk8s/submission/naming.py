"""Names Spark derives for one submission: app id, uniqueID, resource-name prefix, labels.

Everything here is pure: the random parts arrive in `SubmissionIds`. The one impure helper,
`new_submission_ids`, draws them for the shell and is marked as such.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import field

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.objects import APP_ID_LABEL, ROLE_LABEL
from airflow_provider_sparkk8s.records import record
from airflow_provider_sparkk8s.submission import conf_values as cv
from airflow_provider_sparkk8s.submission.conf_values import (
    is_dns1123_label,
    is_dns1123_subdomain,
)
from airflow_provider_sparkk8s.submission.java_text import java_trim

TYPE_CHECKING = False  # typing's, without importing typing (2 ms of the CLI's start)
if TYPE_CHECKING:
    from typing import Protocol


@record
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
    # 256 random bits as hex (Spark's own `createSecret` draws as many), the RPC secret of
    # the secure preset's Secret (features/auth_secret.py); never printed, hence repr=False.
    auth_secret: str = field(default="", repr=False)


if TYPE_CHECKING:

    class _LocalEnvironment(Protocol):
        @property
        def environment(self) -> Mapping[str, str]: ...


if TYPE_CHECKING:

    class NamingConf(Protocol):
        """What the rules here read of a submission (`conf.DriverConf` is one). A protocol, so
        DriverConf can compute its names with this module without it importing conf.py back."""

        @property
        def spark_conf(self) -> Mapping[str, str]: ...
        @property
        def spark_version(self) -> str: ...
        @property
        def ids(self) -> SubmissionIds: ...
        @property
        def local(self) -> _LocalEnvironment: ...
        @property
        def app_id(self) -> str: ...
        @property
        def version_tuple(self) -> tuple[int, int, int]: ...
        @property
        def resource_prefix(self) -> str: ...
        def prefixed(self, prefix: str) -> dict[str, str]: ...


DNS_LABEL_MAX = 63
DNS_SUBDOMAIN_MAX = 253
CONF_MAP_SUFFIX = "-conf-map"
# The longest suffix Spark appends to the prefix (the executor pod-template ConfigMap).
LONGEST_PREFIX_SUFFIX = "-driver-podspec-conf-map"


def app_name(conf: NamingConf) -> str:
    """`spark.app.name`, else Spark's literal fallback `spark`."""
    return conf.spark_conf.get("spark.app.name", "spark")


def uuid4_bits(bits: int) -> int:
    """128 random bits as a version-4 UUID: version nibble 4, variant bits 10 (RFC 9562).

    Written here rather than taken from the uuid module, whose import (with platform) cost
    sparkk8s-submit's start-up about 2.5 ms for three ids."""
    bits &= ~(0xF << 76) & ~(0x3 << 62)
    return bits | (0x4 << 76) | (0x2 << 62)


def uuid_text(value: int) -> str:
    """A UUID's 8-4-4-4-12 text, as Java's `UUID.toString`."""
    digits = f"{value:032x}"
    return f"{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}"


def unique_id(random_bytes: bytes, millis: int) -> str:
    """Spark's `KubernetesUtils.uniqueID`: 3 random bytes as hex + low 40 bits of the clock."""
    return random_bytes[:3].hex() + format(millis & 0xFFFFFFFFFF, "x")


def _slug(text: str) -> str:
    lowered = java_trim(text).lower()
    return re.sub("-+", "-", re.sub(r"[^a-z0-9-]", "-", lowered))


def resource_name_prefix(name: str, uid: str) -> str:
    """Spark's `getResourceNamePrefix`: slug of `<app name>-<uniqueID>`, never starting with
    `-` or a digit. No length limit (Spark applies none)."""
    slug = _slug(f"{name}-{uid}")
    slug = re.sub("^-", "", slug)
    return re.sub("^[0-9]", "x", slug)


def app_name_label(name: str) -> str:
    """Value of the `spark-app-name` label: slug cut to 63 chars, one `-` stripped each end."""
    value = _slug(name)[:DNS_LABEL_MAX]
    value = value.removeprefix("-")
    return value.removesuffix("-")


def is_testing(conf: NamingConf) -> bool:
    return "spark.testing" in conf.spark_conf or "SPARK_TESTING" in conf.local.environment


def driver_resource_prefix(conf: NamingConf) -> str:
    """The submission's resource-name prefix; refuses app names that cannot make valid names.
    Computed once per submission, as `DriverConf.resource_prefix`."""
    override = conf.spark_conf.get("spark.kubernetes.driver.resourceNamePrefix")
    if override is not None and is_testing(conf):
        return override
    prefix = resource_name_prefix(app_name(conf), conf.ids.prefix_unique_id)
    if len(prefix) + len(LONGEST_PREFIX_SUFFIX) > DNS_SUBDOMAIN_MAX:
        raise SparkConfError(
            "spark.app.name",
            app_name(conf),
            f"an application name short enough that '<prefix>{LONGEST_PREFIX_SUFFIX}' fits in "
            f"{DNS_SUBDOMAIN_MAX} characters",
            f"its resource-name prefix {prefix!r} is too long for Kubernetes object names",
        )
    return prefix


def driver_pod_name(conf: NamingConf) -> str:
    explicit = conf.spark_conf.get("spark.kubernetes.driver.pod.name")
    if explicit is None:
        return conf.resource_prefix + "-driver"
    if not is_dns1123_subdomain(explicit):
        raise SparkConfError(
            "spark.kubernetes.driver.pod.name",
            explicit,
            "a DNS-1123 subdomain: at most 253 lower-case letters, digits, '-' and '.', "
            "starting and ending with a letter or digit",
        )
    return explicit


def driver_service_name(conf: NamingConf) -> str:
    """`<prefix>-driver-svc`, or `spark-<fresh uniqueID>-driver-svc` when that is too long."""
    preferred = conf.resource_prefix + "-driver-svc"
    if len(preferred) <= DNS_LABEL_MAX:
        return preferred
    fallback = f"spark-{conf.ids.service_unique_id}-driver-svc"
    if not is_dns1123_label(fallback):
        raise SparkConfError("spark.app.name", app_name(conf), "a shorter application name")
    return fallback


def conf_map_name(uid: str, role: str = "drv") -> str:
    """`spark-drv-<uniqueID>-conf-map`, the id part cut so the whole fits in 253 chars."""
    head = f"spark-{role}-{uid}"[: DNS_SUBDOMAIN_MAX - len(CONF_MAP_SUFFIX)]
    return head + CONF_MAP_SUFFIX


def driver_conf_map_name(conf: NamingConf) -> str:
    return conf_map_name(conf.ids.config_map_unique_id)


def submission_id(namespace: str, pod_name: str) -> str:
    return f"{namespace}:{pod_name}"


# --- the driver's labels and annotations (DriverConf.labels, DriverConf.annotations) -----

DRIVER_LABEL_PREFIX = "spark.kubernetes.driver.label."
DRIVER_ANNOTATION_PREFIX = "spark.kubernetes.driver.annotation."
RESERVED_LABELS = ("spark-version", APP_ID_LABEL, "spark-app-name", ROLE_LABEL)


def substitute_ids(value: str, app_id: str) -> str:
    """Spark's `substituteAppNExecIds` as the driver uses it (no executor id yet)."""
    return value.replace("{{APP_ID}}", app_id).replace("{{EXECUTOR_ID}}", "")


def driver_labels(conf: NamingConf) -> dict[str, str]:
    """User driver labels followed by Spark's preset labels (also the Service selector)."""
    user = conf.prefixed(DRIVER_LABEL_PREFIX)
    if conf.version_tuple >= (4, 0, 0):
        user = {key: substitute_ids(value, conf.app_id) for key, value in user.items()}
    for key in user:
        if key in RESERVED_LABELS:
            raise SparkConfError(
                DRIVER_LABEL_PREFIX + key,
                user[key],
                f"a label key other than Spark's reserved {', '.join(RESERVED_LABELS)}",
            )
    cv.validate_labels(DRIVER_LABEL_PREFIX, user)
    presets = {
        "spark-version": conf.spark_version,
        APP_ID_LABEL: conf.app_id,
        "spark-app-name": app_name_label(app_name(conf)),
        ROLE_LABEL: "driver",
    }
    return {**user, **presets}


def driver_annotations(conf: NamingConf) -> dict[str, str]:
    user = conf.prefixed(DRIVER_ANNOTATION_PREFIX)
    annotations = {key: substitute_ids(value, conf.app_id) for key, value in user.items()}
    return cv.validate_annotations(DRIVER_ANNOTATION_PREFIX, annotations)


_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def java_date_string(epoch_seconds: float) -> str:
    """`java.util.Date.toString()` in UTC, e.g. `Fri Nov 28 17:59:02 UTC 2025`."""
    t = time.gmtime(epoch_seconds)
    return (
        f"{_DAYS[t.tm_wday]} {_MONTHS[t.tm_mon - 1]} {t.tm_mday:02d} "
        f"{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d} UTC {t.tm_year}"
    )


# --- impure: only the shell calls this ----------------------------------------------------


def new_submission_ids(
    random_bytes: Callable[[int], bytes] = os.urandom,
    clock_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
    new_uuid: Callable[[], int] = lambda: uuid4_bits(int.from_bytes(os.urandom(16), "big")),
) -> SubmissionIds:
    """IMPURE: draw the random ids and read the clock for one submission.

    Each uniqueID draws fresh bytes, as in Spark, so the prefix, the ConfigMap and the
    fallback Service name carry different ids.
    """
    now_ms = clock_ms()
    return SubmissionIds(
        app_id="spark-" + f"{new_uuid():032x}",
        prefix_unique_id=unique_id(random_bytes(3), now_ms),
        config_map_unique_id=unique_id(random_bytes(3), now_ms),
        service_unique_id=unique_id(random_bytes(3), now_ms),
        local_dir_uuids=(uuid_text(new_uuid()),),
        properties_date=java_date_string(now_ms / 1000),
        shuffle_seed=int.from_bytes(random_bytes(8), "big"),
        upload_seed=new_uuid(),
        auth_secret=random_bytes(32).hex(),
    )
