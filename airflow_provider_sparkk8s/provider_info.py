"""The provider's metadata, as Airflow reads it from the entry point."""

from __future__ import annotations

from airflow_provider_sparkk8s import __version__


def provider_info() -> dict:
    return {
        "package-name": "airflow-provider-sparkk8s",
        "name": "Spark on Kubernetes",
        "description": "Submit and follow Apache Spark applications on Kubernetes without a JVM.",
        "versions": [__version__],
        "connection-types": [],
        "hooks": [],
        "operators": [],
        "sensors": [],
        "triggers": [],
        "extra-links": [],
    }
