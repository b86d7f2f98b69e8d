"""OpenLineage's parent job and transport information in the Spark conf, as
SparkSubmitOperator injects them, through the openlineage provider's own helpers; and the
task's cost (`application.following.cost`) as the `sparkk8s_cost` run facet of its COMPLETE or FAIL
event.

Without `apache-airflow-providers-openlineage`, or with OpenLineage disabled, nothing changes
and nothing fails. The switches default to the provider's `[openlineage]
spark_inject_parent_job_info` and `spark_inject_transport_info`; keys already in the conf win
(the helpers skip a family that is there).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from typing import Any

from airflow_provider_sparkk8s.application.task.task_parameters import Lineage
from airflow_provider_sparkk8s.version_compat import (
    openlineage_conf,
    openlineage_lineage,
    openlineage_spark,
)

log = logging.getLogger(__name__)


def default_switches() -> tuple[bool, bool]:
    """(inject parent job info, inject transport info) from the provider's config."""
    settings = openlineage_conf()  # only the conf module: this runs when a DAG is parsed
    if settings is None:
        return False, False
    return (
        bool(settings.spark_inject_parent_job_info()),
        bool(settings.spark_inject_transport_info()),
    )


def switches(parent_job_info: bool | None, transport_info: bool | None) -> Lineage:
    """The operator's two switches: as given, else the provider's config."""
    parent_default, transport_default = default_switches()
    return Lineage(
        parent_default if parent_job_info is None else parent_job_info,
        transport_default if transport_info is None else transport_info,
    )


def inject(
    spark_conf: Mapping[str, Any], context: Any, *, parent_job: bool, transport: bool
) -> dict[str, Any]:
    """A copy of `spark_conf` with the requested OpenLineage information added."""
    conf = dict(spark_conf)
    if not (parent_job or transport):
        return conf
    settings, helpers = openlineage_conf(), openlineage_spark()
    if settings is None or helpers is None:
        log.warning(
            "OpenLineage injection was asked for, but apache-airflow-providers-openlineage is "
            "not installed; the Spark conf is left as it is"
        )
        return conf
    if settings.is_disabled():
        log.info("OpenLineage is disabled; nothing is injected into the Spark conf")
        return conf
    if parent_job:
        conf = helpers.inject_parent_job_information_into_spark_properties(conf, context)
    if transport:
        conf = helpers.inject_transport_information_into_spark_properties(conf, context)
    return conf


COST_FACET = "sparkk8s_cost"


@functools.cache
def _cost_facet_type() -> Any | None:
    """The run facet's class, made once OpenLineage is known to be there (an attrs class
    on OpenLineage's RunFacet, as the client's own facets are)."""
    found = openlineage_lineage()
    if found is None:
        return None
    import attr

    @attr.define
    class SparkK8sCostRunFacet(found[1]):  # type: ignore[misc,valid-type]
        """What the application's pods requested over the time they ran (the XCom's cost)."""

        coreSeconds: float  # noqa: N815 - OpenLineage's facets name fields in camelCase
        gibSeconds: float  # noqa: N815
        gpuSeconds: float  # noqa: N815
        pendingSeconds: float  # noqa: N815
        peakExecutors: int  # noqa: N815
        executorPods: int  # noqa: N815
        driver: dict[str, Any] = attr.field(factory=dict)
        executors: dict[str, Any] = attr.field(factory=dict)

    return SparkK8sCostRunFacet


def cost_lineage(cost: Mapping[str, Any] | None) -> Any | None:
    """An OperatorLineage holding the `sparkk8s_cost` run facet; None without OpenLineage
    or without a cost (the extractor then goes on as for any operator)."""
    found, facet = openlineage_lineage(), _cost_facet_type()
    if not cost or found is None or facet is None:
        return None
    operator_lineage = found[0]
    return operator_lineage(
        run_facets={
            COST_FACET: facet(
                coreSeconds=cost.get("core_seconds", 0.0),
                gibSeconds=cost.get("gib_seconds", 0.0),
                gpuSeconds=cost.get("gpu_seconds", 0.0),
                pendingSeconds=cost.get("pending_seconds", 0.0),
                peakExecutors=cost.get("peak_executors", 0),
                executorPods=cost.get("executor_pods", 0),
                driver=dict(cost.get("driver") or {}),
                executors=dict(cost.get("executors") or {}),
            )
        }
    )
