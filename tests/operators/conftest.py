"""The operator's unit tests' in-memory cluster: every hook the operator asks for is a fake
over it (testenv/fakes.py)."""

from __future__ import annotations

import pytest

from airflow_provider_sparkk8s.operators.spark_k8s import SparkK8sSubmitOperator
from testenv.fakes import FakeCluster, FakeHook


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> FakeCluster:
    cluster = FakeCluster()
    hook = FakeHook(cluster)
    monkeypatch.setattr(SparkK8sSubmitOperator, "_hook", lambda self: hook)
    cluster.hook = hook  # type: ignore[attr-defined]
    return cluster
