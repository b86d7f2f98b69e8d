"""The edit most steps make: pod volumes, with their container mounts and env vars.

fabric8's `addToVolumes` / `addNewVolumeMount` / `addNewEnv` append after what is already
there (a template's entries stay in front); nothing is de-duplicated.
"""

from __future__ import annotations

from typing import Iterable

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
