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
        "operators": [
            {
                "integration-name": "Spark on Kubernetes",
                "python-modules": ["airflow_provider_sparkk8s.operators.spark_k8s"],
            }
        ],
        "sensors": [],
        "triggers": [],
        "extra-links": [
            "airflow_provider_sparkk8s.links.spark_k8s.SparkUiLink",
            "airflow_provider_sparkk8s.links.spark_k8s.DriverPodLink",
        ],
        "config": {
            "sparkk8s": {
                "description": "Spark on Kubernetes provider: URL templates of the task's extra "
                "links. Placeholders: {namespace}, {driver_pod}, {application_id}, "
                "{submission_id}, {conn_id}. The connection's extras of the same names win.",
                "options": {
                    "spark_ui_url_template": {
                        "description": "URL of the Spark UI of a running application; no "
                        "link when empty.",
                        "version_added": "0.1.0",
                        "type": "string",
                        "example": "https://spark.example.com/{namespace}/{driver_pod}/",
                        "default": "",
                    },
                    "driver_pod_url_template": {
                        "description": "URL of the driver pod (for example in a Kubernetes "
                        "dashboard); no link when empty.",
                        "version_added": "0.1.0",
                        "type": "string",
                        "example": "https://dashboard.example.com/#/pod/{namespace}/{driver_pod}",
                        "default": "",
                    },
                },
            }
        },
    }
