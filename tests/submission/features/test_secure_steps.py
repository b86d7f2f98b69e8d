"""Our secure preset's steps on their own (auth_secret, executor_network_policy,
pod_security): each does nothing unless its key is set, as spark-submit would."""

from __future__ import annotations

import dataclasses

import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.features import (
    auth_secret,
    executor_network_policy,
    pod_security,
)
from airflow_provider_sparkk8s.submission.naming import new_submission_ids
from airflow_provider_sparkk8s.submission.spec import SparkPod
from tests.support.driver_conf import IDS, make_conf

STEPS = (auth_secret.step, executor_network_policy.step, pod_security.step)


@pytest.mark.parametrize("step", STEPS)
def test_off_by_default(step) -> None:  # type: ignore[no-untyped-def]
    pod = SparkPod.initial()
    result = step(make_conf(), pod)
    assert result.pod is pod and not result.system_properties
    assert not result.pre_resources and not result.resources


def test_the_auth_secret_needs_a_drawn_secret() -> None:
    conf = make_conf({auth_secret.ENABLED_KEY: "true"})
    with pytest.raises(SparkConfError) as caught:
        auth_secret.step(conf, SparkPod.initial())
    assert caught.value.key == auth_secret.ENABLED_KEY
    drawn = dataclasses.replace(conf, ids=dataclasses.replace(IDS, auth_secret="ab" * 32))
    assert len(auth_secret.step(drawn, SparkPod.initial()).pre_resources) == 1


def test_each_submission_draws_its_own_secret_and_never_prints_it() -> None:
    first, second = new_submission_ids(), new_submission_ids()
    assert len(first.auth_secret) == 64 and first.auth_secret != second.auth_secret
    assert first.auth_secret not in repr(first)


@pytest.mark.parametrize(("version", "sent"), [("3.5.9", 1), ("4.1.4", 1), ("4.2.1", 0)])
def test_our_network_policy_only_before_spark_has_its_own(version: str, sent: int) -> None:
    conf = make_conf({executor_network_policy.ENABLED_KEY: "true"}, version=version)
    assert len(executor_network_policy.step(conf, SparkPod.initial()).resources) == sent
