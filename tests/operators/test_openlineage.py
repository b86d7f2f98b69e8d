"""OpenLineage in the Spark conf and the cost facet: the switches as given else the provider's
config, injection through the provider's helpers only when asked and enabled, nothing changed
(and nothing failing) without the provider, and the task's cost as the `sparkk8s_cost` facet."""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import pytest

from airflow_provider_sparkk8s.operators import openlineage


def settings(*, disabled: bool = False, parent: bool = True, transport: bool = False) -> Any:
    return SimpleNamespace(
        is_disabled=lambda: disabled,
        spark_inject_parent_job_info=lambda: parent,
        spark_inject_transport_info=lambda: transport,
    )


HELPERS = SimpleNamespace(
    inject_parent_job_information_into_spark_properties=lambda conf, context: {
        **conf,
        "spark.openlineage.parentJobName": context["job"],
    },
    inject_transport_information_into_spark_properties=lambda conf, context: {
        **conf,
        "spark.openlineage.transport.type": "http",
    },
)


def provider(monkeypatch: pytest.MonkeyPatch, conf: Any, helpers: Any = HELPERS) -> None:
    monkeypatch.setattr(openlineage, "openlineage_conf", lambda: conf)
    monkeypatch.setattr(openlineage, "openlineage_spark", lambda: helpers)


def test_switches_given_win_else_the_providers_config(monkeypatch: pytest.MonkeyPatch) -> None:
    provider(monkeypatch, settings(parent=True, transport=False))
    assert openlineage.switches(None, None) == openlineage.Lineage(True, False)
    assert openlineage.switches(False, True) == openlineage.Lineage(False, True)
    provider(monkeypatch, None)
    assert openlineage.default_switches() == (False, False)


def test_injection_adds_what_was_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    provider(monkeypatch, settings())
    conf = {"spark.app.name": "pi"}
    both = openlineage.inject(conf, {"job": "etl.pi"}, parent_job=True, transport=True)
    assert both == {
        "spark.app.name": "pi",
        "spark.openlineage.parentJobName": "etl.pi",
        "spark.openlineage.transport.type": "http",
    }
    assert conf == {"spark.app.name": "pi"}
    parent_only = openlineage.inject(conf, {"job": "etl.pi"}, parent_job=True, transport=False)
    assert "spark.openlineage.transport.type" not in parent_only


def test_nothing_changes_when_disabled_or_without_the_provider(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    conf = {"spark.app.name": "pi"}
    provider(monkeypatch, settings(disabled=True))
    assert openlineage.inject(conf, {}, parent_job=True, transport=True) == conf
    provider(monkeypatch, None, None)
    with caplog.at_level(logging.WARNING):
        assert openlineage.inject(conf, {}, parent_job=True, transport=False) == conf
    assert "apache-airflow-providers-openlineage is not installed" in caplog.text
    assert openlineage.inject(conf, {}, parent_job=False, transport=False) == conf


def test_the_cost_becomes_the_sparkk8s_cost_run_facet() -> None:
    cost = {
        "core_seconds": 12.5,
        "gib_seconds": 25.0,
        "gpu_seconds": 0.0,
        "pending_seconds": 3.0,
        "peak_executors": 2,
        "executor_pods": 2,
        "driver": {"core_seconds": 4.5},
    }
    lineage = openlineage.cost_lineage(cost)
    assert lineage is not None
    facet = lineage.run_facets[openlineage.COST_FACET]
    assert (facet.coreSeconds, facet.gibSeconds, facet.pendingSeconds) == (12.5, 25.0, 3.0)
    assert (facet.peakExecutors, facet.executorPods) == (2, 2)
    assert facet.driver == {"core_seconds": 4.5} and facet.executors == {}


def test_no_cost_no_lineage(monkeypatch: pytest.MonkeyPatch) -> None:
    assert openlineage.cost_lineage(None) is None
    assert openlineage.cost_lineage({}) is None
    monkeypatch.setattr(openlineage, "openlineage_lineage", lambda: None)
    assert openlineage.cost_lineage({"core_seconds": 1.0}) is None
