"""The platform policy applied to one rendered submission: pure, before any request.

Two moves, both in `services.submit.submission.plan`:
1. `apply_pins` before the conf is prepared: a pinned key the conf leaves out takes the
   policy's value (so a pin also covers what the author never thought of);
2. `enforce` after rendering: every rule is checked against what would be sent (the
   prepared conf and the rendered driver pod), every broken rule is collected, and one
   `PolicyViolation` names each key, its value (secret-looking ones redacted by the
   redaction rules a dry run uses) and the rule. A pinned key set to another value is
   refused, not overridden: the author learns that the value they wrote is not what runs.

The executors are not objects we send (the driver creates them), so what they would ask
for is computed from the conf as Spark's BasicExecutorFeatureStep reads it: cores (or
`request.cores`), memory plus overhead, PySpark and off-heap memory, GPUs; their count is
`spark.executor.instances`, or `spark.dynamicAllocation.maxExecutors` with dynamic
allocation (unset: unbounded, which any executor or core ceiling refuses). An executor pod
template (`spark.kubernetes.executor.podTemplateFile`, or the operator's dict) is read as
the driver will read it: its side-car and init containers keep their images and requests
beside Spark's container, its labels go on every executor, and an account it names is the
executors' (`ExecutorTemplate`).

The secure preset (`"preset": "secure"`, secure_preset.py) adds pins that depend on the Spark
line (the policy's own pins win over them), denies the author's `spark.authenticate.secret*`,
and checks the rendered driver pod and the executor pod template against Pod Security
Admission's restricted profile after our steps filled in what they left out.

Keys the face wrote itself (`provided`: the operator's task identity, its generated pod
name, the connection's namespace) and the submitter's own keys are not the author's input,
so denied keys do not apply to them; a pin holds whoever wrote the key (the policy may not
pin the submitter's own keys).
"""

from __future__ import annotations

from collections.abc import Mapping
from fnmatch import fnmatchcase
from typing import Any

from airflow_provider_sparkk8s.application.policy import secure_preset
from airflow_provider_sparkk8s.application.policy.platform_policy import SUBMITTER_KEYS, Policy
from airflow_provider_sparkk8s.application.policy.redaction import REDACTED, redaction_pattern
from airflow_provider_sparkk8s.errors import PolicyViolation
from airflow_provider_sparkk8s.objects import quantity
from airflow_provider_sparkk8s.records import record
from airflow_provider_sparkk8s.submission import conf_values as cv
from airflow_provider_sparkk8s.submission import pod_template
from airflow_provider_sparkk8s.submission.conf import DriverConf
from airflow_provider_sparkk8s.submission.render import RenderedSubmission
from airflow_provider_sparkk8s.submission.spark_line import DEFAULT_SPARK_VERSION

NAMESPACE_KEY = "spark.kubernetes.namespace"
DRIVER_SA_KEY = "spark.kubernetes.authenticate.driver.serviceAccountName"
EXECUTOR_SA_KEY = "spark.kubernetes.authenticate.executor.serviceAccountName"
EXECUTOR_LABEL_PREFIX = "spark.kubernetes.executor.label."
DRIVER_LABEL_PREFIX = "spark.kubernetes.driver.label."
_LEGACY_MIN_OVERHEAD_MIB = 384

Violation = tuple[str, str, str]  # (key, the value as shown, the rule)


def pins(policy: Policy, spark_version: str) -> dict[str, tuple[str, str]]:
    """Every pinned key -> (value, the rule's name): the preset's for this Spark line, then
    the policy's own, which win."""
    found: dict[str, tuple[str, str]] = {}
    if policy.preset == secure_preset.SECURE:
        found = {k: (v, "preset secure:") for k, v in secure_preset.pins(spark_version).items()}
    return {**found, **{k: (v, "pinned") for k, v in policy.pinned.items()}}


def apply_pins(
    policy: Policy | None, conf: Mapping[str, str], spark_version: str = DEFAULT_SPARK_VERSION
) -> dict[str, str]:
    """The conf with every pinned key it leaves out set to the policy's value (the preset's
    depend on the Spark line)."""
    conf = dict(conf)
    if policy is not None:
        for key, (value, _) in pins(policy, spark_version).items():
            conf.setdefault(key, value)
    return conf


# --- what the application would ask for ---------------------------------------------------


@record
class ExecutorTemplate:
    """What an executor pod template adds to every executor. Spark's container (the one
    `spark.kubernetes.executor.podTemplateContainerName` names, else the first) takes the
    conf's image, cores and memory; the others run as written."""

    key: str  # how the violation names the template
    spark_container: Mapping[str, Any]
    sidecars: tuple[Mapping[str, Any], ...]
    init_containers: tuple[Mapping[str, Any], ...]
    labels: Mapping[str, str]
    # What its spec names in `serviceAccountName` or the older `serviceAccount`: Spark 3.5
    # keeps the older field over the conf's accounts, newer lines either; both are checked.
    service_accounts: tuple[str, ...]

    def sidecar_requests(self, resource: str) -> float:
        return sum(_container_request(c, resource) for c in self.sidecars)

    def gpus(self, conf_amount: int) -> int:
        """The conf's GPUs replace the Spark container's own; side-cars keep theirs."""
        spark = conf_amount or _gpu_limits(self.spark_container)
        return spark + sum(_gpu_limits(c) for c in self.sidecars)


def executor_template(conf: DriverConf) -> ExecutorTemplate | None:
    template = pod_template.executor_template(conf)
    if template is None:
        return None
    key = (
        "executor_pod_template"
        if conf.executor_pod_template is not None
        else pod_template.EXECUTOR_TEMPLATE_KEY
    )
    split = pod_template.select_spark_container(
        template, conf.get("spark.kubernetes.executor.podTemplateContainerName")
    )
    spec = split.pod.get("spec") or {}
    accounts = (spec.get("serviceAccountName"), spec.get("serviceAccount"))
    return ExecutorTemplate(
        key=key,
        spark_container=split.container,
        sidecars=tuple(spec.get("containers") or ()),
        init_containers=tuple(spec.get("initContainers") or ()),
        labels=dict((split.pod.get("metadata") or {}).get("labels") or {}),
        service_accounts=tuple(dict.fromkeys(str(a) for a in accounts if a)),
    )


def _container_request(container: Mapping[str, Any], resource: str) -> float:
    return quantity(((container.get("resources") or {}).get("requests") or {}).get(resource, 0))


def _gpu_limits(container: Mapping[str, Any]) -> int:
    limits = (container.get("resources") or {}).get("limits") or {}
    return int(sum(quantity(v) for k, v in limits.items() if str(k).endswith("/gpu")))


@record
class Footprint:
    """Requests of the whole application: the driver pod as rendered, executors from conf."""

    executors: int | None  # None: unbounded
    executors_key: str
    driver_cores: float
    executor_cores: float
    driver_memory_mib: int
    executor_memory_mib: int
    driver_gpus: int
    executor_gpus: int

    def total(self, driver: float, executor: float) -> float | None:
        return None if self.executors is None else driver + self.executors * executor


def _containers(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    spec = pod.get("spec") or {}
    return [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]


def _requests(pod: Mapping[str, Any], resource: str) -> float:
    total = 0.0
    for container in (pod.get("spec") or {}).get("containers") or []:
        requests = (container.get("resources") or {}).get("requests") or {}
        total += quantity(requests.get(resource, 0))
    return total


def executor_count(conf: Mapping[str, str]) -> tuple[int | None, str]:
    """How many executors may run at once, and the key that says so."""
    if cv.get_bool(conf, "spark.dynamicAllocation.enabled", False):
        key = "spark.dynamicAllocation.maxExecutors"
        return (cv.get_int(conf, key, 0) if key in conf else None), key
    return cv.get_int(conf, "spark.executor.instances", 2), "spark.executor.instances"


def executor_memory_mib(conf: DriverConf) -> int:
    """An executor pod's memory request, as BasicExecutorFeatureStep adds it up."""
    memory = cv.get_size_mib(conf, "spark.executor.memory", "1g") or 0
    overhead = cv.get_size_mib(conf, "spark.executor.memoryOverhead")
    if overhead is None:
        # The executor's factor, else the one the driver's system properties carry (0.4
        # for PySpark and R, as basic_driver writes it), else Spark's 0.1.
        non_jvm = conf.main_app_resource.kind != "java"
        key = "spark.executor.memoryOverheadFactor"
        if not conf.contains(key):
            key = "spark.kubernetes.memoryOverheadFactor"
        factor = cv.get_double(conf, key, 0.4 if non_jvm else 0.1)
        minimum = _LEGACY_MIN_OVERHEAD_MIB
        if conf.version_tuple >= (4, 0, 0):
            minimum = cv.get_size_mib(conf, "spark.executor.minMemoryOverhead", "384m") or 0
        overhead = max(int((factor or 0.0) * memory), minimum)
    pyspark = 0
    if conf.main_app_resource.kind == "python":
        pyspark = cv.get_size_mib(conf, "spark.executor.pyspark.memory") or 0
    off_heap = 0
    if cv.get_bool(conf, "spark.memory.offHeap.enabled", False):
        off_heap = cv.get_size_mib(conf, "spark.memory.offHeap.size", "0") or 0
    return memory + overhead + pyspark + off_heap


def footprint(
    conf: DriverConf, rendered: RenderedSubmission, template: ExecutorTemplate | None = None
) -> Footprint:
    """`template`: the executor pod template, whose side-cars add to every executor."""
    spark_conf = conf.spark_conf
    executors, key = executor_count(spark_conf)
    request = spark_conf.get("spark.kubernetes.executor.request.cores")
    executor_cores = (
        quantity(request) if request else float(cv.get_int(spark_conf, "spark.executor.cores", 1))
    )
    executor_memory = executor_memory_mib(conf)
    executor_gpus = cv.get_int(spark_conf, "spark.executor.resource.gpu.amount", 0)
    if template is not None:
        executor_cores += template.sidecar_requests("cpu")
        executor_memory += int(template.sidecar_requests("memory") // 2**20)
        executor_gpus = template.gpus(executor_gpus)
    return Footprint(
        executors=executors,
        executors_key=key,
        driver_cores=_requests(rendered.driver_pod, "cpu"),
        executor_cores=executor_cores,
        driver_memory_mib=int(_requests(rendered.driver_pod, "memory") // 2**20),
        executor_memory_mib=executor_memory,
        driver_gpus=cv.get_int(spark_conf, "spark.driver.resource.gpu.amount", 0),
        executor_gpus=executor_gpus,
    )


# --- the rules --------------------------------------------------------------------------


def registry_path(image: str) -> str:
    """`registry/repository` of an image reference, as the container runtime resolves it
    (no registry: docker.io; a one-part name: docker.io/library/...); tag and digest off."""
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)
    if ":" in last[-1]:
        name = name[: len(name) - len(last[-1])] + last[-1].split(":", 1)[0]
    parts = name.split("/")
    if len(parts) > 1 and ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
        return name
    return "docker.io/" + (name if len(parts) > 1 else f"library/{name}")


def _registry_allowed(image: str, allowed: tuple[str, ...]) -> bool:
    location = registry_path(image)
    return any(
        location == entry.rstrip("/") or location.startswith(entry.rstrip("/") + "/")
        for entry in allowed
    )


def _matches(value: str, globs: tuple[str, ...]) -> bool:
    return any(fnmatchcase(value, glob) for glob in globs)


class _Checker:
    def __init__(
        self,
        policy: Policy,
        conf: DriverConf,
        provided: Mapping[str, str],
        template: ExecutorTemplate | None,
    ) -> None:
        self.policy = policy
        self.template = template
        self.conf = conf.spark_conf
        self.spark_version = conf.spark_version
        self.pattern = redaction_pattern(self.conf)
        self.provided = provided
        self.found: list[Violation] = []

    def shown(self, key: str, value: str) -> str:
        secret = self.pattern.search(key) or self.pattern.search(value)
        return REDACTED if secret else value

    def refuse(self, key: str, value: str, rule: str) -> None:
        found = (key, self.shown(key, value), rule)
        if found not in self.found:  # driver and executors from one image key: said once
            self.found.append(found)

    def authored(self, key: str) -> bool:
        if key in SUBMITTER_KEYS:
            return False
        return not (key in self.provided and self.provided[key] == self.conf.get(key))

    def keys(self) -> None:
        for key in sorted(self.conf):
            if not self.authored(key):
                continue
            glob = next((g for g in self.policy.denied_keys if fnmatchcase(key, g)), None)
            if glob is not None:
                self.refuse(key, self.conf[key], f"denied_keys {glob!r}")
            elif self.policy.preset == secure_preset.SECURE:
                glob = next((g for g in secure_preset.DENIED_KEYS if fnmatchcase(key, g)), None)
                if glob is not None:
                    rule = f"preset secure: denied {glob!r} (the preset draws the secret)"
                    self.refuse(key, self.conf[key], rule)
        # A pin holds whoever wrote the key: the operator's own keys may not differ either.
        for key, (want, rule) in sorted(pins(self.policy, self.spark_version).items()):
            have = self.conf.get(key)
            if have is not None and have != want:
                self.refuse(key, have, f"{rule} {key}={self.shown(key, want)!r}")

    def preset(self, conf: DriverConf, rendered: RenderedSubmission) -> None:
        """What the secure preset refuses beyond its pins: the pods against the restricted
        profile (after our steps filled what they left out), 4.3's escalation keys and the
        exclusion of a step it needs."""
        if self.policy.preset != secure_preset.SECURE:
            return
        found = secure_preset.conf_problems(self.conf)
        found += secure_preset.pod_problems("driver pod", rendered.driver_pod)
        template = pod_template.executor_template(conf)
        if template is not None:
            found += secure_preset.pod_problems("executor pod template", template)
        for key, value, rule in found:
            self.refuse(key, value, rule)

    def places(self, rendered: RenderedSubmission) -> None:
        policy, pod, template = self.policy, rendered.driver_pod, self.template
        if policy.allowed_namespaces is not None and not _matches(
            rendered.namespace, policy.allowed_namespaces
        ):
            rule = f"allowed_namespaces {list(policy.allowed_namespaces)}"
            self.refuse(NAMESPACE_KEY, rendered.namespace, rule)
        if policy.allowed_service_accounts is not None:
            allowed = policy.allowed_service_accounts
            rule = f"allowed_service_accounts {list(allowed)}"
            # A pod without one runs as its namespace's `default` account.
            driver_sa = (pod.get("spec") or {}).get("serviceAccountName") or "default"
            if not _matches(driver_sa, allowed):
                self.refuse(DRIVER_SA_KEY, driver_sa, rule)
            executor_sa = self.conf.get(EXECUTOR_SA_KEY)  # else the driver's, as Spark does
            if executor_sa is not None and not _matches(executor_sa, allowed):
                self.refuse(EXECUTOR_SA_KEY, executor_sa, rule)
            if template is not None:
                for account in template.service_accounts:
                    if not _matches(account, allowed):
                        self.refuse(f"{template.key} (its service account)", account, rule)
        if policy.allowed_image_registries is not None:
            allowed = policy.allowed_image_registries
            rule = f"allowed_image_registries {list(allowed)}"
            for container in _containers(pod):
                image = str(container.get("image") or "")
                if image and not _registry_allowed(image, allowed):
                    self.refuse(self._image_key(image, "driver"), image, rule)
            executor = self.conf.get("spark.kubernetes.executor.container.image") or self.conf.get(
                "spark.kubernetes.container.image"
            )
            if executor and not _registry_allowed(executor, allowed):
                self.refuse(self._image_key(executor, "executor"), executor, rule)
            if template is not None:
                for container in (*template.sidecars, *template.init_containers):
                    image = str(container.get("image") or "")
                    if image and not _registry_allowed(image, allowed):
                        self.refuse(f"{template.key} (a container's image)", image, rule)

    def _image_key(self, image: str, role: str) -> str:
        for key in (f"spark.kubernetes.{role}.container.image", "spark.kubernetes.container.image"):
            if self.conf.get(key) == image:
                return key
        return f"spark.kubernetes.{role}.podTemplateFile (a container's image)"

    def ceilings(self, fp: Footprint) -> None:
        policy = self.policy
        unbounded = "unset with dynamic allocation (unbounded)"
        count = "unbounded" if fp.executors is None else str(fp.executors)
        if policy.max_executors is not None and (
            fp.executors is None or fp.executors > policy.max_executors
        ):
            value = unbounded if fp.executors is None else count
            self.found.append((fp.executors_key, value, f"max_executors {policy.max_executors}"))
        each = "executors x " + (
            "({} + the executor pod template's side-cars)" if self.template else "{}"
        )
        for name, ceiling, driver, executor, unit, keys in (
            ("max_cores", policy.max_cores, fp.driver_cores, fp.executor_cores, "cores",
             "the driver pod's cpu request + " + each.format("spark.executor.cores")),
            ("max_memory", policy.max_memory_mib, fp.driver_memory_mib, fp.executor_memory_mib,
             "MiB", "the driver pod's memory request + "
             + each.format("(executor memory + overhead)")),
            ("max_gpus", policy.max_gpus, fp.driver_gpus, fp.executor_gpus, "GPUs",
             "spark.driver.resource.gpu.amount + "
             + each.format("spark.executor.resource.gpu.amount")),
        ):  # fmt: skip
            if ceiling is None:
                continue
            total = fp.total(driver, executor)
            if total is None and executor == 0:
                total = driver
            if total is None or total > ceiling:
                figure = (
                    f"{_num(driver)} + {count} x {_num(executor)}"
                    + ("" if total is None else f" = {_num(total)}")
                    + f" {unit}"
                )
                self.found.append((keys, figure, f"{name} {_num(ceiling)}"))

    def labels(self, rendered: RenderedSubmission) -> None:
        driver_labels = (rendered.driver_pod.get("metadata") or {}).get("labels") or {}
        for label in self.policy.required_labels:
            if label not in driver_labels:
                self.found.append((DRIVER_LABEL_PREFIX + label, "<unset>", "required_labels"))
            in_template = self.template is not None and label in self.template.labels
            if EXECUTOR_LABEL_PREFIX + label not in self.conf and not in_template:
                self.found.append((EXECUTOR_LABEL_PREFIX + label, "<unset>", "required_labels"))


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def violations(
    policy: Policy,
    conf: DriverConf,
    rendered: RenderedSubmission,
    provided: Mapping[str, str] | None = None,
) -> list[Violation]:
    """Every rule the submission breaks, in a fixed order (keys, places, ceilings, labels,
    the preset's pods)."""
    template = executor_template(conf)
    checker = _Checker(policy, conf, provided or {}, template)
    checker.keys()
    checker.places(rendered)
    checker.ceilings(footprint(conf, rendered, template))
    checker.labels(rendered)
    checker.preset(conf, rendered)
    return checker.found


def enforce(
    policy: Policy | None,
    conf: DriverConf,
    rendered: RenderedSubmission,
    provided: Mapping[str, str] | None = None,
) -> None:
    """Raise `PolicyViolation` naming every broken rule; nothing when there is no policy."""
    if policy is None:
        return
    found = violations(policy, conf, rendered, provided)
    if found:
        raise PolicyViolation(policy.source, found)
