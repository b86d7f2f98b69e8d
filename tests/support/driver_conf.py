"""A DriverConf on plain data for pipeline unit tests, with fixed ids."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_provider_sparkk8s.submission.conf import (
    DriverConf,
    LocalInputs,
    MainAppResource,
)
from airflow_provider_sparkk8s.submission.naming import SubmissionIds

APP_ID = "spark-0123456789abcdef0123456789abcdef"
IDS = SubmissionIds(
    app_id=APP_ID,
    prefix_unique_id="a1b2c39ad0f8a400",
    config_map_unique_id="d4e5f69ad0f8a400",
    service_unique_id="0a0b0c9ad0f8a400",
    local_dir_uuids=("5f0e2a53-9c1e-4d8e-a3f5-0b7f6c1d2e3f",),
    properties_date="Fri Nov 28 17:59:02 UTC 2025",
)
IMAGE = "apache/spark:4.3.0"
PREFIX = "pi-a1b2c39ad0f8a400"


def make_conf(
    extra: Mapping[str, str] | None = None,
    *,
    version: str = "4.3.0",
    kind: str = "java",
    primary: str | None = "local:///opt/spark/examples/jars/spark-examples.jar",
    main_class: str = "org.apache.spark.examples.SparkPi",
    app_args: tuple[str, ...] = (),
    proxy_user: str | None = None,
    local: LocalInputs | None = None,
    **fields: Any,
) -> DriverConf:
    spark_conf = {"spark.app.name": "pi", "spark.kubernetes.container.image": IMAGE}
    spark_conf.update(extra or {})
    return DriverConf(
        spark_conf=spark_conf,
        spark_version=version,
        ids=IDS,
        main_app_resource=MainAppResource(kind, primary),  # type: ignore[arg-type]
        main_class=main_class,
        app_args=app_args,
        proxy_user=proxy_user,
        local=local or LocalInputs(spark_user="alice"),
        **fields,
    )
