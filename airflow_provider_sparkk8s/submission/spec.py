"""Plain data that flows through the driver feature steps.

Mirrors Spark's `SparkPod` and `KubernetesDriverSpec`. Values are frozen; a step
returns new values and never mutates what it was given. Kubernetes objects are
plain dicts in their JSON (camelCase) form, exactly as sent to the API server.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

KubeObject = dict[str, Any]


@dataclass(frozen=True)
class SparkPod:
    """The driver pod without Spark's container, and Spark's container on its own.

    The container is appended to `pod["spec"]["containers"]` only at the end
    (Spark puts its container last, after any template side-cars).
    """

    pod: KubeObject
    container: KubeObject

    @staticmethod
    def initial() -> SparkPod:
        return SparkPod(pod={"metadata": {}, "spec": {}}, container={})


@dataclass(frozen=True)
class StepResult:
    """The four answers of a feature step. Every answer defaults to "nothing"."""

    pod: SparkPod
    system_properties: Mapping[str, str] = field(default_factory=dict)
    pre_resources: Sequence[KubeObject] = ()
    resources: Sequence[KubeObject] = ()


@dataclass(frozen=True)
class DriverSpec:
    """The fold's accumulator: Spark's `KubernetesDriverSpec`."""

    pod: SparkPod
    pre_resources: tuple[KubeObject, ...]
    resources: tuple[KubeObject, ...]
    system_properties: Mapping[str, str]


# A feature step is a pure function of the driver conf and the pod so far.
# `conf` is a `DriverConf` (see conf.py); typed loosely here to avoid an import cycle.
FeatureStep = Callable[[Any, SparkPod], StepResult]
