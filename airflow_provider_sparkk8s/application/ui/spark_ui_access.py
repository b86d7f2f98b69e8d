"""Which driver the Spark UI link may reach, and with which connection (issue 44). Pure: the
plugin (plugins/spark_ui.py) reads, these rules decide.

The `spark_ui` XCom is data anyone who may edit XComs can rewrite, so nothing in it chooses
credentials or a target. The connection is the one the task's own definition names (its
serialized `kubernetes_conn_id`), the namespace the one that definition submits to (its
`namespace`, else its conf's `spark.kubernetes.namespace`, else the connection's), and the
driver pod named by the XCom is proxied only after a GET with that connection shows it
carries the task instance's identity labels; its UI port is the pod's own `spark-ui`
container port. A refusal is the plugin's own message: it names what is missing and never
repeats kube-apiserver's body (which names the platform's identity).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from airflow_provider_sparkk8s import objects
from airflow_provider_sparkk8s.application.task.submission_plan import NAMESPACE_KEY
from airflow_provider_sparkk8s.application.task.task_identity import (
    TASK_INSTANCE_LABEL,
    TaskInstanceRef,
)
from airflow_provider_sparkk8s.application.ui.live_ui import SparkUiTarget
from airflow_provider_sparkk8s.provider_info import DEFAULT_CONN_ID
from airflow_provider_sparkk8s.records import record

# The operator adds it to its serialized fields (SparkK8sSubmitOperator.get_serialized_fields).
SERIALIZED_CONN_FIELD = "kubernetes_conn_id"
# Template fields: the definition holds them unrendered.
NAMESPACE_FIELD = "namespace"
CONF_FIELD = "conf"
DEFINITION_FIELDS = (SERIALIZED_CONN_FIELD, NAMESPACE_FIELD, CONF_FIELD)
ROLE_LABEL = "spark-role"
# A mapped task's definition holds only what `partial()` was given: the default connection
# is the operator's own default, known for our class alone (a subclass may change it).
OPERATOR_CLASS = ("airflow_provider_sparkk8s.operators.spark_k8s", "SparkK8sSubmitOperator")
# The name Spark's BasicDriverFeatureStep (and ours) gives the driver container's UI port.
UI_PORT_NAME = "spark-ui"
RBAC_DOC = "docs/rbac.yaml"


class UiRefused(Exception):
    """The plugin's own answer instead of a proxied one: `status` and a message that names
    what is missing or wrong."""

    def __init__(self, status: int, message: str) -> None:
        self.status, self.message = status, message
        super().__init__(message)


class RenderedMissing(UiRefused):
    """The namespace depends on a rendered value Airflow does not hold."""


@record
class TaskDefinition:
    """What the api-server's serialized DAG says of one task: the fields of
    DEFINITION_FIELDS it holds (unrendered), and which of them a mapped task expands."""

    values: Mapping[str, Any]
    expanded: frozenset[str] = frozenset()


def _templated(value: Any) -> bool:
    """Whether an unrendered value holds Jinja (the task rendered it in its own run)."""
    if isinstance(value, str):
        return "{{" in value or "{%" in value
    if isinstance(value, Mapping):
        return any(_templated(key) or _templated(item) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return any(_templated(item) for item in value)
    return False


def found_definition(definition: TaskDefinition | None, task: str) -> TaskDefinition:
    """The task's definition; a 404 when Airflow's serialized DAGs hold none."""
    if definition is None:
        raise UiRefused(404, f"No definition of {task} in Airflow's serialized DAGs")
    return definition


def task_connection(definition: TaskDefinition, task: str) -> str:
    """The connection the task's definition names; a refusal when it names none."""
    if SERIALIZED_CONN_FIELD in definition.expanded:
        raise UiRefused(
            403,
            f"{task} expands over {SERIALIZED_CONN_FIELD}: the api-server proxies only with a "
            "connection the task's definition names itself",
        )
    values = definition.values
    conn_id = values.get(SERIALIZED_CONN_FIELD)
    ours = (values.get("_task_module"), values.get("task_type")) == OPERATOR_CLASS
    if conn_id is None and values.get("_is_mapped") and ours:
        conn_id = DEFAULT_CONN_ID
    if not isinstance(conn_id, str) or not conn_id:
        raise UiRefused(
            403,
            f"The serialized definition of {task} names no {SERIALIZED_CONN_FIELD} (not a "
            "SparkK8sSubmitOperator, or a DAG serialized before this provider version: it "
            "counts once the DAG is parsed again)",
        )
    return conn_id


def _rendered(name: str, rendered: Mapping[str, Any] | None, task: str) -> Any:
    """What the task rendered of a template field: Airflow's rendered fields, which the task
    writes and no XCom edit reaches."""
    if rendered is None or name not in rendered:
        raise RenderedMissing(
            403,
            f"{task} templates (or expands) its {name!r}, and Airflow holds no rendered value "
            "of it for this task instance yet: its namespace is unknown",
        )
    return rendered[name]


def task_namespace(
    definition: TaskDefinition,
    rendered: Mapping[str, Any] | None,
    connection_namespace: str,
    task: str,
) -> str:
    """The namespace the task submits to, as the operator picks it (`namespace`, else the
    conf's spark.kubernetes.namespace, else the connection's). A value the definition holds
    unrendered (Jinja, a template file, a mapped task's expansion) is read from what the
    task rendered."""
    explicit = definition.values.get(NAMESPACE_FIELD)
    if NAMESPACE_FIELD in definition.expanded or _templated(explicit):
        explicit = _rendered(NAMESPACE_FIELD, rendered, task)
    if explicit:
        return _namespace_text(explicit, NAMESPACE_FIELD, task)
    conf = definition.values.get(CONF_FIELD)
    in_conf = conf.get(NAMESPACE_KEY) if isinstance(conf, Mapping) else None
    if CONF_FIELD in definition.expanded or isinstance(conf, str) or _templated(in_conf):
        conf = _rendered(CONF_FIELD, rendered, task)
        if isinstance(conf, str):  # how Airflow keeps a rendered value it could not store whole
            try:
                conf = json.loads(conf)
            except ValueError:
                conf = None
        if not isinstance(conf, Mapping):
            raise UiRefused(
                403, f"{task}'s rendered conf is not readable here: its namespace is unknown"
            )
        in_conf = conf.get(NAMESPACE_KEY)
    return _namespace_text(in_conf, NAMESPACE_KEY, task) if in_conf else connection_namespace


def needs_rendered(definition: TaskDefinition) -> bool:
    """Whether the namespace depends on what the task rendered (one more read of the DB)."""
    try:
        task_namespace(definition, None, "", "")
    except RenderedMissing:
        return True
    except UiRefused:
        return False
    return False


def _namespace_text(value: Any, name: str, task: str) -> str:
    if not isinstance(value, str) or _templated(value):
        raise UiRefused(403, f"{task}'s {name} is not a namespace the api-server can read")
    return value.strip()


def check_hint(hint: SparkUiTarget, conn_id: str, namespace: str) -> None:
    """The XCom's connection and namespace must be the task's own: an XCom that names
    others was not written by this task's operator, and no request follows it."""
    if hint.conn_id != conn_id:
        raise UiRefused(
            403,
            f"The spark_ui XCom names connection {hint.conn_id!r}, but the task's definition "
            f"names {conn_id!r}: refused, nothing was sent",
        )
    if hint.namespace != namespace:
        raise UiRefused(
            403,
            f"The spark_ui XCom names namespace {hint.namespace!r}, but the task submits to "
            f"{namespace!r}: refused, nothing was sent",
        )


def driver_ui_port(pod: Mapping[str, Any], ref: TaskInstanceRef, namespace: str) -> int:
    """The UI port of a driver pod that is this task instance's (its identity labels, its
    namespace); a refusal naming what is wrong otherwise."""
    where = f"{namespace}/{objects.name(pod)}"
    labels = objects.labels(pod)
    if objects.namespace(pod) != namespace:
        raise UiRefused(403, f"The pod {where} is not in the task's namespace {namespace!r}")
    if labels.get(TASK_INSTANCE_LABEL) != ref.digest:
        raise UiRefused(
            403,
            f"The pod {where} does not carry the label {TASK_INSTANCE_LABEL}={ref.digest} of "
            f"{ref.describe()}: it is not this task instance's driver",
        )
    if labels.get(ROLE_LABEL) != "driver":
        raise UiRefused(403, f"The pod {where} is not a Spark driver ({ROLE_LABEL}=driver)")
    for container in (pod.get("spec") or {}).get("containers") or []:
        for port in container.get("ports") or []:
            if port.get("name") == UI_PORT_NAME and isinstance(port.get("containerPort"), int):
                return int(port["containerPort"])
    raise UiRefused(404, f"The driver pod {where} declares no {UI_PORT_NAME!r} port (no Spark UI)")


def api_refusal(status: int, verb_resource: str, namespace: str, conn_id: str) -> UiRefused:
    """kube-apiserver's 401 or 403 as the plugin's own message (its body stays here)."""
    if status == 401:
        return UiRefused(
            403, f"The API server did not accept connection {conn_id!r}'s credentials (401)"
        )
    return UiRefused(
        403,
        f"Connection {conn_id!r}'s identity may not {verb_resource} in namespace {namespace!r} "
        f"(the API server answered {status}): the Spark UI needs it in the Role ({RBAC_DOC})",
    )


def is_api_refusal(status: int, content_type: str | None) -> bool:
    """Whether a pod-proxy answer is kube-apiserver's own 401/403 (a JSON Status), not the
    driver UI's (Spark's ACLs answer HTML)."""
    return status in (401, 403) and "json" in (content_type or "")


def unexpected_answer(status: int, namespace: str, pod_name: str) -> UiRefused:
    return UiRefused(
        502, f"The API server answered {status} to a GET of the pod {namespace}/{pod_name}"
    )
