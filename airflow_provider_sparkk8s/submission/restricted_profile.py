"""Pod Security Admission's "restricted" profile as data: fill a pod, list what breaks it.

The secure preset (application/policy/secure_preset.py) sets `spark.kubernetes.sparkk8s.podSecurity
=restricted`; then the driver pod (features/pod_security.py) and the executor pod template
(pod_template.executor_template_text) get the fields the profile requires that they leave
out: `runAsNonRoot: true` and `seccompProfile: RuntimeDefault` on the pod, and on every
container `allowPrivilegeEscalation: false` and `capabilities.drop: [ALL]`. A value written
the other way (a template's `runAsNonRoot: false`, a side-car's `privileged: true`) is kept:
`problems` names it and the guardrails refuse the submission, as they refuse a pinned key set
to another value, so the author learns what would not run instead of a silent rewrite.

`runAsUser` is left to the image: Spark's images run as the numeric user 185, which the
kubelet checks against `runAsNonRoot`; an image whose user is root fails at its start with
the kubelet's message. The checks follow the profile's controls (Kubernetes' Pod Security
Standards, restricted, v1.25+): host namespaces, privileged, capabilities, hostPath volumes,
host ports, root, privilege escalation, seccomp, and the volume types. Pure.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission import conf_values as cv
from airflow_provider_sparkk8s.submission.spec import KubeObject

TYPE_CHECKING = False  # typing's, without importing typing (2 ms of the CLI's start)
if TYPE_CHECKING:
    from typing import Any

KEY = "spark.kubernetes.sparkk8s.podSecurity"
RESTRICTED = "restricted"
CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")
_ALLOWED_VOLUMES = frozenset(
    {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
     "projected", "secret"}
)  # fmt: skip
_SECCOMP_OK = ("RuntimeDefault", "Localhost")


def enabled(conf: cv.ConfLike) -> bool:
    """Whether the restricted profile applies; any other value than `restricted` is refused."""
    value = cv.get_str(conf, KEY)
    if value is None:
        return False
    if value.strip() != RESTRICTED:
        raise SparkConfError(KEY, value, f"'{RESTRICTED}' (Pod Security Admission's profile)")
    return True


def harden_container(container: Mapping[str, Any]) -> KubeObject:
    """A copy of `container` with the restricted fields it leaves out filled in."""
    hardened = copy.deepcopy(dict(container))
    context = hardened.setdefault("securityContext", {})
    context.setdefault("allowPrivilegeEscalation", False)
    capabilities = context.setdefault("capabilities", {})
    drop = list(capabilities.get("drop") or [])
    if "ALL" not in drop:
        capabilities["drop"] = [*drop, "ALL"]
    return hardened


def harden_pod(pod: Mapping[str, Any]) -> KubeObject:
    """A copy of `pod` with the pod-level fields and every container's filled in."""
    hardened = copy.deepcopy(dict(pod))
    spec = hardened.setdefault("spec", {})
    context = spec.setdefault("securityContext", {})
    context.setdefault("runAsNonRoot", True)
    context.setdefault("seccompProfile", {"type": "RuntimeDefault"})
    for field in CONTAINER_LISTS:
        if spec.get(field):
            spec[field] = [harden_container(c) for c in spec[field]]
    return hardened


def _context_problems(where: str, context: Mapping[str, Any]) -> list[str]:
    found = []
    if context.get("runAsNonRoot") is False:
        found.append(f"{where} runAsNonRoot: false")
    if context.get("runAsUser") == 0:
        found.append(f"{where} runAsUser: 0")
    seccomp = (context.get("seccompProfile") or {}).get("type")
    if seccomp is not None and seccomp not in _SECCOMP_OK:
        found.append(f"{where} seccompProfile {seccomp}")
    return found


def problems(pod: Mapping[str, Any]) -> list[str]:
    """What in `pod` the restricted profile refuses, each as `<where> <field>: <value>`."""
    spec = pod.get("spec") or {}
    found = [f"spec.{field}: true" for field in ("hostNetwork", "hostPID", "hostIPC")
             if spec.get(field)]  # fmt: skip
    for volume in spec.get("volumes") or ():
        kinds = sorted(set(volume) - {"name"} - _ALLOWED_VOLUMES)
        if kinds:
            found.append(f"volume {volume.get('name')!r}: {kinds[0]}")
    pod_context = spec.get("securityContext") or {}
    found += _context_problems("spec.securityContext", pod_context)
    pod_non_root = pod_context.get("runAsNonRoot") is True
    pod_seccomp = (pod_context.get("seccompProfile") or {}).get("type") in _SECCOMP_OK
    for field in CONTAINER_LISTS:
        for container in spec.get(field) or ():
            where = f"container {container.get('name')!r}"
            context = container.get("securityContext") or {}
            found += _context_problems(where, context)
            if context.get("privileged"):
                found.append(f"{where} privileged: true")
            if context.get("allowPrivilegeEscalation") is not False:
                found.append(f"{where} allowPrivilegeEscalation: not false")
            capabilities = context.get("capabilities") or {}
            if "ALL" not in (capabilities.get("drop") or ()):
                found.append(f"{where} capabilities.drop: without ALL")
            added = sorted(set(capabilities.get("add") or ()) - {"NET_BIND_SERVICE"})
            if added:
                found.append(f"{where} capabilities.add: {added}")
            if not pod_non_root and context.get("runAsNonRoot") is not True:
                found.append(f"{where} runAsNonRoot: unset (and unset on the pod)")
            seccomp = (context.get("seccompProfile") or {}).get("type")
            if not pod_seccomp and seccomp not in _SECCOMP_OK:
                found.append(f"{where} seccompProfile: unset (and unset on the pod)")
            if any(port.get("hostPort") for port in container.get("ports") or ()):
                found.append(f"{where} hostPort")
    return found
