"""What each volume of a pod holds on disk, and where each container sees it (pure).

`plan_volumes` turns the pod's volumes, the data of the ConfigMaps and Secrets they name and
the tokens the shell requested (`token_requests`) into `VolumePlan`s; the runtime writes
them under the pod's directory. `plan_mounts` maps a container's volumeMounts onto those
directories. A volume that cannot be materialised yet raises `VolumeNotReady` with the
kubelet's wording; the pod stays `ContainerCreating` and the agent tries again, as a
kubelet retries a failed mount.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from testenv.nodeagent.env import ContainerConfigError, Objects, PodFacts, field_value
from testenv.nodeagent.quantity import ceil_units

DEFAULT_MODE = 0o644  # Kubernetes' defaultMode 420
DEFAULT_TOKEN_SECONDS = 3607  # what a kubelet asks for when expirationSeconds is unset
_SUPPORTED = ("configMap", "secret", "emptyDir", "projected", "downwardAPI", "hostPath")


class VolumeNotReady(Exception):
    """A volume that cannot be set up (yet): a missing object, or a kind we do not run."""


@dataclass(frozen=True)
class VolumeFile:
    path: str  # relative to the volume's directory
    data: bytes
    mode: int = DEFAULT_MODE


@dataclass(frozen=True)
class VolumePlan:
    name: str
    kind: Literal["files", "directory", "host"]
    files: tuple[VolumeFile, ...] = ()
    host_path: str | None = None
    read_only: bool = False  # the kubelet mounts ConfigMap, Secret and projected volumes read-only


@dataclass(frozen=True)
class TokenRequest:
    """One projected service-account token the shell asks the TokenRequest API for."""

    volume: str
    path: str
    audience: str | None
    expiration_seconds: int


@dataclass(frozen=True)
class Mount:
    volume: str
    sub_path: str
    target: str
    read_only: bool


def token_requests(pod: Mapping[str, Any]) -> list[TokenRequest]:
    requests = []
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        for source in (volume.get("projected") or {}).get("sources") or []:
            token = source.get("serviceAccountToken")
            if token is not None:
                requests.append(
                    TokenRequest(
                        volume=volume["name"],
                        path=token["path"],
                        audience=token.get("audience"),
                        expiration_seconds=int(
                            token.get("expirationSeconds") or DEFAULT_TOKEN_SECONDS
                        ),
                    )
                )
    return requests


def _clean_path(path: str, volume: str) -> str:
    normal = posixpath.normpath(path)
    if normal.startswith(("/", "..")) or normal == ".":
        raise VolumeNotReady(f"volume {volume}: invalid path {path!r}")
    return normal


def _keyed_files(
    kind: str,
    name: str,
    source: Mapping[str, Any],
    objects: Objects,
    volume: str,
    default_mode: int,
) -> list[VolumeFile]:
    data = objects.get((kind, name))
    if data is None:
        if source.get("optional"):
            return []
        raise VolumeNotReady(f'{kind.lower()} "{name}" not found')
    items = source.get("items")
    if not items:
        return [
            VolumeFile(_clean_path(k, volume), v, default_mode) for k, v in sorted(data.items())
        ]
    files = []
    for item in items:
        if item["key"] not in data:
            if source.get("optional"):
                continue
            raise VolumeNotReady(
                f"configmap references non-existent config key: {item['key']}"
                if kind == "ConfigMap"
                else f"references non-existent secret key: {item['key']}"
            )
        mode = item.get("mode", default_mode)
        files.append(VolumeFile(_clean_path(item["path"], volume), data[item["key"]], mode))
    return files


def _downward_files(
    items: list[Mapping[str, Any]], facts: PodFacts, volume: str, default_mode: int
) -> list[VolumeFile]:
    containers = {c["name"]: c for c in (facts.pod.get("spec") or {}).get("containers") or []}
    files = []
    for item in items:
        try:
            if "fieldRef" in item:
                text = field_value(item["fieldRef"]["fieldPath"], facts)
            else:
                ref = item["resourceFieldRef"]
                container = containers.get(ref.get("containerName", ""), {})
                resource = ref["resource"]
                kind, _, res = resource.partition(".")
                value = ((container.get("resources") or {}).get(kind) or {}).get(res)
                value = value or facts.node_allocatable.get(res, "0")
                text = str(ceil_units(value, ref.get("divisor") or 1))
        except ContainerConfigError as error:
            raise VolumeNotReady(f"volume {volume}: {error}") from error
        mode = item.get("mode", default_mode)
        files.append(VolumeFile(_clean_path(item["path"], volume), text.encode(), mode))
    return files


def _projected_files(
    volume: Mapping[str, Any],
    facts: PodFacts,
    objects: Objects,
    tokens: Mapping[tuple[str, str], str],
) -> list[VolumeFile]:
    name = volume["name"]
    projected = volume["projected"]
    default_mode = projected.get("defaultMode", DEFAULT_MODE)
    files: list[VolumeFile] = []
    for source in projected.get("sources") or []:
        if "serviceAccountToken" in source:
            path = source["serviceAccountToken"]["path"]
            token = tokens.get((name, path))
            if token is None:
                raise VolumeNotReady(f"volume {name}: no token for {path}")
            files.append(VolumeFile(_clean_path(path, name), token.encode(), default_mode))
        elif "configMap" in source or "secret" in source:
            kind = "ConfigMap" if "configMap" in source else "Secret"
            inner = source["configMap"] if kind == "ConfigMap" else source["secret"]
            files += _keyed_files(kind, inner["name"], inner, objects, name, default_mode)
        elif "downwardAPI" in source:
            files += _downward_files(
                source["downwardAPI"].get("items") or [], facts, name, default_mode
            )
        else:
            kinds = ", ".join(sorted(source))
            raise VolumeNotReady(f"volume {name}: projected source {kinds} is not supported")
    return files


def plan_volume(
    volume: Mapping[str, Any],
    facts: PodFacts,
    objects: Objects,
    tokens: Mapping[tuple[str, str], str],
) -> VolumePlan:
    name = volume["name"]
    if "configMap" in volume or "secret" in volume:
        kind = "ConfigMap" if "configMap" in volume else "Secret"
        source = volume["configMap"] if kind == "ConfigMap" else volume["secret"]
        object_name = source["name"] if kind == "ConfigMap" else source["secretName"]
        mode = source.get("defaultMode", DEFAULT_MODE)
        files = _keyed_files(kind, object_name, source, objects, name, mode)
        return VolumePlan(name, "files", tuple(files), read_only=True)
    if "projected" in volume:
        files = _projected_files(volume, facts, objects, tokens)
        return VolumePlan(name, "files", tuple(files), read_only=True)
    if "downwardAPI" in volume:
        source = volume["downwardAPI"]
        mode = source.get("defaultMode", DEFAULT_MODE)
        files = _downward_files(source.get("items") or [], facts, name, mode)
        return VolumePlan(name, "files", tuple(files), read_only=True)
    if "emptyDir" in volume:
        return VolumePlan(name, "directory")
    if "hostPath" in volume:
        return VolumePlan(name, "host", host_path=str(volume["hostPath"]["path"]))
    kinds = ", ".join(sorted(k for k in volume if k != "name")) or "none"
    raise VolumeNotReady(
        f"volume {name}: type {kinds} is not supported by the process runtime "
        f"(supported: {', '.join(_SUPPORTED)})"
    )


def plan_volumes(
    pod: Mapping[str, Any],
    facts: PodFacts,
    objects: Objects,
    tokens: Mapping[tuple[str, str], str],
) -> list[VolumePlan]:
    return [
        plan_volume(volume, facts, objects, tokens)
        for volume in (pod.get("spec") or {}).get("volumes") or []
    ]


def plan_mounts(container: Mapping[str, Any], volumes: Mapping[str, VolumePlan]) -> list[Mount]:
    """The container's volumeMounts, checked against the pod's volumes, shortest path first
    so a mount inside another lands on top of it."""
    mounts = []
    for mount in container.get("volumeMounts") or []:
        volume = volumes.get(mount["name"])
        if volume is None:
            raise ContainerConfigError(
                f"container {container['name']}: volumeMount {mount['name']} names no volume"
            )
        sub_path = mount.get("subPath") or ""
        if sub_path:
            sub_path = _clean_path(sub_path, volume.name)
        mounts.append(
            Mount(
                volume=volume.name,
                sub_path=sub_path,
                target=posixpath.normpath(mount["mountPath"]),
                read_only=bool(mount.get("readOnly")) or volume.read_only,
            )
        )
    return sorted(mounts, key=lambda m: (m.target.count("/"), m.target))
