"""The plain data that flows through the feature steps: a fresh empty pod each time, results
that say "nothing" by default, and values that cannot be changed in place."""

from __future__ import annotations

import dataclasses

import pytest

from airflow_provider_sparkk8s.submission.spec import DriverSpec, FeatureStep, SparkPod, StepResult


def test_the_initial_pod_is_empty_and_never_shared() -> None:
    first, second = SparkPod.initial(), SparkPod.initial()
    assert first == SparkPod(pod={"metadata": {}, "spec": {}}, container={})
    assert first.pod is not second.pod and first.pod["metadata"] is not second.pod["metadata"]


def test_a_step_result_says_nothing_beyond_its_pod_by_default() -> None:
    result = StepResult(pod=SparkPod.initial())
    assert result.system_properties == {}
    assert result.pre_resources == () and result.resources == ()


def test_the_values_are_frozen() -> None:
    pod = SparkPod.initial()
    spec = DriverSpec(pod=pod, pre_resources=(), resources=(), system_properties={})
    step = FeatureStep("user.module:step", (0, 0, 0), lambda conf, pod: StepResult(pod=pod))
    for value, field in ((pod, "pod"), (spec, "resources"), (step, "since")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(value, field, None)
