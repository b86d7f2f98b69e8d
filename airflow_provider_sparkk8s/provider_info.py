"""The provider's metadata, as Airflow reads it from the entry point."""

from __future__ import annotations

from airflow_provider_sparkk8s import __version__

# The connection, declared once: its type, the id every face defaults to (operators,
# sensors, triggers and the hook all call the parameter `kubernetes_conn_id`), and its form.
CONN_TYPE = "spark_k8s"
DEFAULT_CONN_ID = "spark_k8s_default"
# Seconds between two full lists of a snapshot store (services/following/store.py), by default.
DEFAULT_RESYNC_INTERVAL = 30.0
HOOK_NAME = "Spark on Kubernetes"


def _text(label: str, description: str) -> dict:
    return {"label": label, "description": description, "schema": {"type": ["string", "null"]}}


def _secret(label: str, description: str) -> dict:
    schema = {"type": ["string", "null"], "format": "password"}
    return {"label": label, "description": description, "schema": schema}


def _flag(label: str, description: str) -> dict:
    schema = {"type": ["boolean", "null"], "default": False}
    return {"label": label, "description": description, "schema": schema}


# Airflow 3.2+ builds the connection form from this, without importing the hook. Airflow
# < 3.2 calls SparkK8sHook.get_connection_form_widgets() / get_ui_field_behaviour(), which
# are generated from this same declaration.
SPARK_K8S_CONNECTION: dict = {
    "hook-class-name": "airflow_provider_sparkk8s.hooks.spark_k8s.SparkK8sHook",
    "hook-name": HOOK_NAME,
    "connection-type": CONN_TYPE,
    "conn-fields": {
        "in_cluster": _flag(
            "In-cluster configuration",
            "Use the pod's service account (token and CA from the standard mount).",
        ),
        "kube_config_path": _text(
            "Kubeconfig path", "Path of a kubeconfig file on the Airflow workers."
        ),
        "kube_config_secret": _secret(
            "Kubeconfig (inline)", "Content of a kubeconfig file (YAML or JSON)."
        ),
        "cluster_context": _text(
            "Context", "Kubeconfig context; the kubeconfig's current context when empty."
        ),
        "namespace": _text(
            "Namespace",
            "Default namespace; the operator's namespace wins, else the kubeconfig context's, "
            "else default.",
        ),
        "token": _secret("Bearer token", "A static bearer token."),
        "token_file": _text("Token file", "Path of a bearer token file, re-read when it changes."),
        "ca_cert_file": _text("CA certificate file", "Path of the API server's CA (PEM)."),
        "ca_cert_data": _text("CA certificate (PEM)", "The API server's CA certificate, PEM."),
        "client_cert_file": _text("Client certificate file", "Path of a client certificate."),
        "client_cert_data": _text("Client certificate (PEM)", "A client certificate, PEM."),
        "client_key_file": _text("Client key file", "Path of the client certificate's key."),
        "client_private_key": _secret(
            "Client key (inline PEM)", "The client certificate's key, PEM."
        ),
        "tls_server_name": _text(
            "TLS server name", "Name to verify the server certificate against (and send as SNI)."
        ),
        "insecure_skip_tls_verify": _flag(
            "Skip TLS verification",
            "Do not verify the API server's certificate (insecure; logs a warning).",
        ),
        "policy": _text(
            "Platform policy (JSON)",
            "Guardrails every submission through this connection must keep (denied keys, "
            "pins, allowed namespaces, service accounts and registries, ceilings, labels); "
            "wins over [sparkk8s] policy. See docs/policy.md.",
        ),
    },
    "ui-field-behaviour": {
        "hidden-fields": ["schema", "login", "password", "port", "extra"],
        "relabeling": {"host": "API server URL"},
        "placeholders": {
            "host": "https://kubernetes.example.com:6443 (empty: kubeconfig or in-cluster)",
            "kube_config_path": "~/.kube/config",
            "namespace": "default",
            "token_file": "/var/run/secrets/tokens/spark",
        },
    },
}


def provider_info() -> dict:
    return {
        "package-name": "airflow-provider-sparkk8s",
        "name": "Spark on Kubernetes",
        "description": "Submit and follow Apache Spark applications on Kubernetes without a JVM.",
        "versions": [__version__],
        "integrations": [
            {
                "integration-name": "Spark on Kubernetes",
                "external-doc-url": "https://spark.apache.org/docs/latest/running-on-kubernetes.html",
                "tags": ["apache", "software"],
            }
        ],
        "connection-types": [SPARK_K8S_CONNECTION],
        "hooks": [
            {
                "integration-name": "Spark on Kubernetes",
                "python-modules": ["airflow_provider_sparkk8s.hooks.spark_k8s"],
            }
        ],
        "operators": [
            {
                "integration-name": "Spark on Kubernetes",
                "python-modules": [
                    "airflow_provider_sparkk8s.operators.spark_k8s",
                    "airflow_provider_sparkk8s.operators.driver_cleanup",
                    "airflow_provider_sparkk8s.operators.connect_server",
                ],
            }
        ],
        "sensors": [
            {
                "integration-name": "Spark on Kubernetes",
                "python-modules": ["airflow_provider_sparkk8s.sensors.spark_k8s"],
            }
        ],
        "triggers": [
            {
                "integration-name": "Spark on Kubernetes",
                "python-modules": [
                    "airflow_provider_sparkk8s.triggers.spark_k8s",
                    "airflow_provider_sparkk8s.triggers.spark_k8s_submit",
                    "airflow_provider_sparkk8s.triggers.spark_k8s_sensor",
                    "airflow_provider_sparkk8s.triggers.connect_server",
                ],
            }
        ],
        "extra-links": [
            "airflow_provider_sparkk8s.links.spark_k8s.SparkUiLink",
            "airflow_provider_sparkk8s.links.spark_k8s.DriverPodLink",
        ],
        "config": {
            "sparkk8s": {
                "description": "Spark on Kubernetes provider: the platform policy, and URL "
                "templates of the task's extra links. Placeholders: {namespace}, {driver_pod}, "
                "{application_id}, {submission_id}, {conn_id}. The connection's extras of the "
                "same names win.",
                "options": {
                    "spark_ui_url_template": {
                        "description": "URL of the Spark UI of a running application; no "
                        "link when empty.",
                        "version_added": "0.1.0",
                        "type": "string",
                        "example": "https://spark.example.com/{namespace}/{driver_pod}/",
                        "default": "",
                    },
                    "policy": {
                        "description": "The platform policy (JSON or YAML) of submissions "
                        "through a connection without a policy extra; empty: none. See "
                        "docs/policy.md.",
                        "version_added": "0.1.0",
                        "type": "string",
                        "example": '{"denied_keys": ["spark.kubernetes.authenticate.*"], '
                        '"max_executors": 20}',
                        "default": "",
                    },
                    "event_log_dir": {
                        "description": "Spark's event log folder (a shared path or object "
                        "storage) for submissions through a connection without an "
                        "event_log_dir extra, unless the operator's event_log_dir is set; "
                        "empty: no event log. See docs/spark_ui.md.",
                        "version_added": "0.1.0",
                        "type": "string",
                        "example": "s3a://logs/spark-events",
                        "default": "",
                    },
                    "event_log_rolling_max_file_size": {
                        "description": "Roll the event log in files of this size (at least "
                        "10m); empty: one file per application.",
                        "version_added": "0.1.0",
                        "type": "string",
                        "example": "128m",
                        "default": "",
                    },
                    "history_server_url": {
                        "description": "A Spark History Server's URL the workers reach "
                        "(http://spark-history.spark-history.svc:18080): after the driver "
                        "ends, the run summary is read from its REST API, for submissions "
                        "with an event log through a connection without a history_server_url "
                        "extra; empty: no run summary. See docs/spark_ui.md.",
                        "version_added": "0.1.0",
                        "type": "string",
                        "example": "http://spark-history.spark-history.svc:18080",
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
