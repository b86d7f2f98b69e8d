"""OpenLineage's parent job and transport information in the Spark conf, as
SparkSubmitOperator injects them, through the openlineage provider's own helpers.

Without `apache-airflow-providers-openlineage`, or with OpenLineage disabled, nothing changes
and nothing fails. The switches default to the provider's `[openlineage]
spark_inject_parent_job_info` and `spark_inject_transport_info`; keys already in the conf win
(the helpers skip a family that is there).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from airflow_provider_sparkk8s.version_compat import openlineage_conf, openlineage_spark

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
