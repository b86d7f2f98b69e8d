"""Run Apache Spark applications on Kubernetes from Airflow: no JVM, no spark-submit."""

from __future__ import annotations

__version__ = "0.1.0"


def get_provider_info() -> dict:
    """Airflow's provider metadata; `package-name` must equal the distribution name."""
    from airflow_provider_sparkk8s.provider_info import provider_info

    return provider_info()
