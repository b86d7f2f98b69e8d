"""SparkK8sDriverCleanupOperator: delete live drivers whose task instance ended without them.

The automatic way out for leftover drivers (`application/task/leftovers.py` has the rules): list
the driver pods the operator submitted, ask Airflow for their task instances' states (one
Task SDK call per DAG, two when some are mapped), and delete the live drivers whose task
instance has finished, or is gone from a DAG that still has runs here. Only Airflow knows a
task instance's state, so this runs as a task; `dags/spark_leftover_drivers.py` runs it every
hour. `sparkk8s-submit --kill ns:glob` is the manual way, when a person decides.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from airflow_provider_sparkk8s.application.task.leftovers import (
    SUBMITTED_DRIVERS_SELECTOR,
    UNKNOWN_DAG,
    Answers,
    Leftover,
    QueryGroup,
    answered,
    leftover_drivers,
    live_submitted_drivers,
    query_group,
    states_by_task_instance,
)
from airflow_provider_sparkk8s.application.task.task_identity import TaskInstanceRef
from airflow_provider_sparkk8s.provider_info import DEFAULT_CONN_ID
from airflow_provider_sparkk8s.services.pods.driver_pods import DriverPods
from airflow_provider_sparkk8s.services.submit.driver_removal import delete_driver
from airflow_provider_sparkk8s.version_compat import BaseOperator


class SparkK8sDriverCleanupOperator(BaseOperator):
    """Deletes live Spark drivers whose Airflow task instance has finished (or was deleted).

    A driver is left behind when its task instance ends without cleaning up: a worker killed
    hard, a task marked failed while its worker was gone. Drivers whose task instance is
    still queued, running, deferred, up for retry or cleared stay: a retry adopts them.
    Owner references take each deleted driver's Service and ConfigMaps along, and Spark's
    driver takes its executors; the files its submission uploaded (named in its
    spark.properties) are removed after it.

    :param kubernetes_conn_id: the ``spark_k8s`` connection.
    :param namespace: where to look (default: the connection's namespace).
    :param list_only: only log what would be deleted.
    :param upload_conn_id: the upload storage's connection (as the submitting operators');
        None: the drivers' own ``spark.hadoop.fs.s3a.*`` keys and the environment.
    :return: one line per leftover driver (deleted, or that would be deleted).
    """

    template_fields: Sequence[str] = ("namespace",)
    ui_color = "#e25a1c"

    def __init__(
        self,
        *,
        kubernetes_conn_id: str = DEFAULT_CONN_ID,
        namespace: str | None = None,
        list_only: bool = False,
        upload_conn_id: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.kubernetes_conn_id = kubernetes_conn_id
        self.namespace = namespace
        self.list_only = list_only
        self.upload_conn_id = upload_conn_id

    def execute(self, context: Any) -> list[str]:
        from airflow_provider_sparkk8s.hooks.spark_k8s import SparkK8sHook

        hook = SparkK8sHook(self.kubernetes_conn_id, self.namespace)
        namespace = hook.get_namespace()
        with DriverPods(hook.get_client(), owns_client=True) as pods:
            drivers = live_submitted_drivers(pods.list_pods(namespace, SUBMITTED_DRIVERS_SELECTOR))
            refs = [ref for _, ref in drivers]
            answers = task_states(context["ti"], refs)
            states = states_by_task_instance(
                answers, refs, known_dags(context["ti"], answers, refs)
            )
            leftovers = leftover_drivers(drivers, states)
            self._log_unknown(drivers, states)
            for leftover in leftovers:
                self._remove(pods, leftover)
        if not leftovers:
            self.log.info(
                "No leftover drivers in namespace %s (%d live driver(s) checked)",
                namespace,
                len(drivers),
            )
        return [leftover.describe() for leftover in leftovers]

    def _log_unknown(
        self, drivers: Sequence[tuple[Any, TaskInstanceRef]], states: Mapping[TaskInstanceRef, Any]
    ) -> None:
        for pod, ref in drivers:
            if states.get(ref) == UNKNOWN_DAG:
                self.log.info(
                    "Keeping driver %s:%s: this Airflow has no run of DAG %r (another "
                    "Airflow's, or a deleted DAG's; delete it by hand if it is a leftover)",
                    pod["metadata"].get("namespace"),
                    pod["metadata"].get("name"),
                    ref.dag_id,
                )

    def _remove(self, pods: DriverPods, leftover: Leftover) -> None:
        if self.list_only:
            self.log.info("Would delete leftover driver %s", leftover.describe())
            return
        from airflow_provider_sparkk8s.hooks.upload_storage import SparkK8sUploadStorageHook

        self.log.info("Deleting leftover driver %s", leftover.describe())
        delete_driver(
            pods,
            leftover.namespace,
            leftover.pod,
            remove_uploads=SparkK8sUploadStorageHook(self.upload_conn_id).remove,
            log=self.log,
            why="leftover",
        )


def task_states(ti: Any, refs: Sequence[TaskInstanceRef]) -> Answers:
    """Airflow's answers per query group (`get_task_states`, one call per group)."""
    wanted: dict[QueryGroup, tuple[set[str], set[str]]] = defaultdict(lambda: (set(), set()))
    for ref in refs:
        task_ids, run_ids = wanted[query_group(ref)]
        task_ids.add(ref.task_id)
        run_ids.add(ref.run_id)
    return {
        (dag_id, mapped): ti.get_task_states(
            dag_id=dag_id, task_ids=sorted(task_ids), run_ids=sorted(run_ids)
        )
        for (dag_id, mapped), (task_ids, run_ids) in wanted.items()
    }


def known_dags(ti: Any, answers: Answers, refs: Sequence[TaskInstanceRef]) -> set[str]:
    """The DAGs of unanswered task instances that have runs in this Airflow (`get_dr_count`)."""
    unanswered = {ref.dag_id for ref in refs if not answered(answers, ref)}
    return {dag_id for dag_id in unanswered if ti.get_dr_count(dag_id=dag_id) > 0}
