"""What most steps make: pod volumes with their container mounts and env vars, and the
immutable ConfigMaps and Secrets that carry files to the driver.

fabric8's `addToVolumes` / `addNewVolumeMount` / `addNewEnv` append after what is already
there (a template's entries stay in front); nothing is de-duplicated.
"""

from __future__ import annotations

from collections.abc import Iterable

from airflow_provider_sparkk8s.submission.podops import add_to_list, editable
from airflow_provider_sparkk8s.submission.spec import KubeObject, SparkPod


def add_volumes_and_mounts(
    pod: SparkPod,
    volumes: Iterable[KubeObject],
    mounts: Iterable[KubeObject],
    env: Iterable[KubeObject] = (),
) -> SparkPod:
    """A new SparkPod with `volumes`, `mounts` and `env` appended; `pod` is left untouched."""
    new_pod, container = editable(pod)
    add_to_list(new_pod, ("spec", "volumes"), volumes)
    add_to_list(container, ("volumeMounts",), mounts)
    add_to_list(container, ("env",), env)
    return SparkPod(pod=new_pod, container=container)


def first_clash(pod: SparkPod, volumes: list[KubeObject], mounts: list[KubeObject]) -> int | None:
    """Index of the first (volume, mount) pair whose volume name or mount path is already used
    in the pod (or earlier in the lists): the API server would refuse the pod."""
    names = {volume.get("name") for volume in (pod.pod.get("spec") or {}).get("volumes") or ()}
    paths = {mount.get("mountPath") for mount in pod.container.get("volumeMounts") or ()}
    for index, (volume, mount) in enumerate(zip(volumes, mounts, strict=True)):
        if volume["name"] in names or mount["mountPath"] in paths:
            return index
        names.add(volume["name"])
        paths.add(mount["mountPath"])
    return None


def immutable_data_object(kind: str, name: str, data: dict[str, str]) -> KubeObject:
    """An immutable v1 ConfigMap or Secret as Spark builds it (fabric8 leaves out empty data)."""
    obj: KubeObject = {
        "apiVersion": "v1",
        "kind": kind,
        "metadata": {"name": name},
        "immutable": True,
    }
    if data:
        obj["data"] = data
    return obj
