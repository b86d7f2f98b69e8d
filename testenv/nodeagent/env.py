"""A container's environment, resolved as a kubelet resolves it (pure).

The shell fetches every ConfigMap and Secret the pod names (`referenced_objects`) and hands
their data in; nothing here does I/O. A reference that cannot be resolved raises
`ContainerConfigError` with the kubelet's own wording, and the pod waits with
`CreateContainerConfigError` until the object appears.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from testenv.nodeagent.quantity import ceil_units

ObjectKey = tuple[str, str]  # ("ConfigMap" | "Secret", name), in the pod's namespace
Objects = Mapping[ObjectKey, Mapping[str, bytes] | None]  # None: the object does not exist
_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
_FIELD_LABEL = re.compile(r"^metadata\.(labels|annotations)\['(.+)'\]$")


class ContainerConfigError(Exception):
    """What a kubelet reports as `CreateContainerConfigError`."""


@dataclass(frozen=True)
class PodFacts:
    """What `fieldRef` and `resourceFieldRef` read, besides the pod object itself."""

    pod: Mapping[str, Any]
    pod_ip: str
    host_ip: str
    node_allocatable: Mapping[str, str] = field(default_factory=dict)

    @property
    def namespace(self) -> str:
        return str(self.pod["metadata"].get("namespace") or "default")


def object_data(kind: str, obj: Mapping[str, Any]) -> dict[str, bytes]:
    """A fetched ConfigMap's or Secret's entries as bytes (Secrets and binaryData are base64)."""
    data: dict[str, bytes] = {}
    if kind == "Secret":
        for key, value in (obj.get("data") or {}).items():
            data[key] = base64.b64decode(value)
        for key, value in (obj.get("stringData") or {}).items():
            data[key] = str(value).encode()
        return data
    for key, value in (obj.get("data") or {}).items():
        data[key] = str(value).encode()
    for key, value in (obj.get("binaryData") or {}).items():
        data[key] = base64.b64decode(value)
    return data


def referenced_objects(pod: Mapping[str, Any]) -> set[ObjectKey]:
    """Every ConfigMap and Secret the pod's env, envFrom and volumes name."""
    spec = pod.get("spec") or {}
    keys: set[ObjectKey] = set()
    for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        for source in container.get("envFrom") or []:
            if "configMapRef" in source:
                keys.add(("ConfigMap", source["configMapRef"]["name"]))
            if "secretRef" in source:
                keys.add(("Secret", source["secretRef"]["name"]))
        for var in container.get("env") or []:
            value_from = var.get("valueFrom") or {}
            if "configMapKeyRef" in value_from:
                keys.add(("ConfigMap", value_from["configMapKeyRef"]["name"]))
            if "secretKeyRef" in value_from:
                keys.add(("Secret", value_from["secretKeyRef"]["name"]))
    for volume in spec.get("volumes") or []:
        if "configMap" in volume:
            keys.add(("ConfigMap", volume["configMap"]["name"]))
        if "secret" in volume:
            keys.add(("Secret", volume["secret"]["secretName"]))
        for source in (volume.get("projected") or {}).get("sources") or []:
            if "configMap" in source:
                keys.add(("ConfigMap", source["configMap"]["name"]))
            if "secret" in source:
                keys.add(("Secret", source["secret"]["name"]))
    return keys


def expand(text: str, variables: Mapping[str, str]) -> str:
    """Kubernetes' `$(VAR)` expansion: a defined variable is replaced, an undefined one is
    left as written, and `$$` is a literal `$`."""
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "$" and index + 1 < len(text):
            following = text[index + 1]
            if following == "$":
                out.append("$")
                index += 2
                continue
            if following == "(":
                end = text.find(")", index + 2)
                if end != -1:
                    name = text[index + 2 : end]
                    out.append(variables[name] if name in variables else text[index : end + 1])
                    index = end + 1
                    continue
        out.append(char)
        index += 1
    return "".join(out)


def field_value(path: str, facts: PodFacts) -> str:
    """A `fieldRef` as the downward API reports it; unknown paths are a config error."""
    metadata = facts.pod.get("metadata") or {}
    spec = facts.pod.get("spec") or {}
    simple = {
        "metadata.name": metadata.get("name"),
        "metadata.namespace": facts.namespace,
        "metadata.uid": metadata.get("uid"),
        "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName"),
        "status.hostIP": facts.host_ip,
        "status.hostIPs": facts.host_ip,
        "status.podIP": facts.pod_ip,
        "status.podIPs": facts.pod_ip,
    }
    if path in simple:
        return str(simple[path] or "")
    if path in ("metadata.labels", "metadata.annotations"):
        entries = metadata.get(path.split(".")[1]) or {}
        return "\n".join(f'{key}="{entries[key]}"' for key in sorted(entries))
    match = _FIELD_LABEL.match(path)
    if match:
        return str((metadata.get(match.group(1)) or {}).get(match.group(2), ""))
    raise ContainerConfigError(f"unsupported fieldPath: {path}")


def resource_value(ref: Mapping[str, Any], container: Mapping[str, Any], facts: PodFacts) -> str:
    """A `resourceFieldRef`: the container's limit or request, the node's allocatable when
    a limit is unset, divided by `divisor` and rounded up."""
    resource = str(ref.get("resource", ""))
    kind, _, name = resource.partition(".")
    if kind not in ("limits", "requests") or not name:
        raise ContainerConfigError(f"unsupported resource: {resource}")
    resources = container.get("resources") or {}
    value = (resources.get(kind) or {}).get(name)
    if value is None and kind == "requests":
        value = (resources.get("limits") or {}).get(name)
    if value is None:
        value = facts.node_allocatable.get(name, "0")
    return str(ceil_units(value, ref.get("divisor") or 1))


def _keyed(
    kind: str, ref: Mapping[str, Any], objects: Objects, namespace: str
) -> tuple[str | None, str | None]:
    """(value, error) of a configMapKeyRef / secretKeyRef; both None for an optional miss."""
    name, key, optional = ref["name"], ref["key"], bool(ref.get("optional"))
    data = objects.get((kind, name))
    if data is None:
        return (None, None) if optional else (None, f'{kind.lower()} "{name}" not found')
    if key not in data:
        if optional:
            return None, None
        return None, f"couldn't find key {key} in {kind} {namespace}/{name}"
    return data[key].decode(errors="replace"), None


def _from_sources(container: Mapping[str, Any], objects: Objects, namespace: str) -> dict[str, str]:
    env: dict[str, str] = {}
    for source in container.get("envFrom") or []:
        prefix = source.get("prefix") or ""
        for kind, ref_key in (("ConfigMap", "configMapRef"), ("Secret", "secretRef")):
            if ref_key not in source:
                continue
            ref = source[ref_key]
            data = objects.get((kind, ref["name"]))
            if data is None:
                if ref.get("optional"):
                    continue
                raise ContainerConfigError(f'{kind.lower()} "{ref["name"]}" not found')
            for key, value in data.items():
                if _ENV_NAME.match(prefix + key):  # a kubelet skips invalid names
                    env[prefix + key] = value.decode(errors="replace")
    return env


def resolve_env(
    container: Mapping[str, Any],
    facts: PodFacts,
    objects: Objects,
    service_env: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The container's environment, in the kubelet's order: envFrom, then env (later wins),
    with `$(VAR)` expanded against what is defined so far and the service variables."""
    env = _from_sources(container, objects, facts.namespace)
    for var in container.get("env") or []:
        name = var["name"]
        value_from = var.get("valueFrom")
        if not value_from:
            env[name] = expand(str(var.get("value", "")), {**(service_env or {}), **env})
            continue
        if "fieldRef" in value_from:
            env[name] = field_value(value_from["fieldRef"]["fieldPath"], facts)
        elif "resourceFieldRef" in value_from:
            env[name] = resource_value(value_from["resourceFieldRef"], container, facts)
        else:
            kind, ref = (
                ("ConfigMap", value_from["configMapKeyRef"])
                if "configMapKeyRef" in value_from
                else ("Secret", value_from["secretKeyRef"])
            )
            value, error = _keyed(kind, ref, objects, facts.namespace)
            if error:
                raise ContainerConfigError(error)
            if value is not None:
                env[name] = value
    return {**(service_env or {}), **env}
