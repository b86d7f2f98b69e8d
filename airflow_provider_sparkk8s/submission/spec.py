"""Plain data that flows through the driver feature steps.

Mirrors Spark's `SparkPod` and `KubernetesDriverSpec`. Values are frozen; a step
returns new values and never mutates what it was given. Kubernetes objects are
plain dicts in their JSON (camelCase) form, exactly as sent to the API server.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import field

from airflow_provider_sparkk8s.records import record
from airflow_provider_sparkk8s.submission.conf import DriverConf

TYPE_CHECKING = False  # typing's, without importing typing (2 ms of the CLI's start)
if TYPE_CHECKING:
    from typing import Any

KubeObject = dict[str, "Any"]


@record
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


@record
class StepResult:
    """The four answers of a feature step. Every answer defaults to "nothing"."""

    pod: SparkPod
    system_properties: Mapping[str, str] = field(default_factory=dict)
    pre_resources: Sequence[KubeObject] = ()
    resources: Sequence[KubeObject] = ()


@record
class DriverSpec:
    """The fold's accumulator: Spark's `KubernetesDriverSpec`."""

    pod: SparkPod
    pre_resources: tuple[KubeObject, ...]
    resources: tuple[KubeObject, ...]
    system_properties: Mapping[str, str]


# A feature step is a pure function of the driver conf and the pod so far.
StepFunction = Callable[[DriverConf, SparkPod], StepResult]


@record
class FeatureStep:
    """One step of the fold: its name, the first Spark version that runs it, its function.

    `name` is Spark's class name for Spark's steps (what excludedFeatureSteps names), and
    the import path it was given by for a user step (`since` is then (0, 0, 0)).
    """

    name: str
    since: tuple[int, int, int]
    run: StepFunction
