"""The e2e suite's side of the Airflow stacks (testenv/airflow_stack.py): the
namespaces and connection its DAGs (tests/e2e/e2e_dags) name, where its phases'
timings go, and a stack on PostgreSQL for two triggerers."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from testenv.airflow_stack import AirflowStack, launch_stack

E2E_DAGS = Path(__file__).resolve().parent / "e2e_dags"

# The namespace of the stack's connections (spark_k8s_real, spark_k8s_default) on their planes.
E2E_NAMESPACE = "airflow-e2e"
# The namespace of the DAG e2e_spark_kill (tests/e2e/e2e_dags/e2e_spark.py names it too).
E2E_KILL_NAMESPACE = "airflow-e2e-kill"
# The namespace of the Connect server DAG (tests/e2e/e2e_dags/e2e_connect.py names it too).
E2E_CONNECT_NAMESPACE = "airflow-e2e-connect"
# The connection of the DAGs that run on the real node (tests/e2e/e2e_dags/e2e_spark.py names
# it too, through tests/e2e/real_node_pods.py): the real kubelet, containerd and runc
# (testenv/realnode), in E2E_NAMESPACE, E2E_KILL_NAMESPACE and the timeout DAGs' namespaces
# (tests/e2e/e2e_dags/e2e_timeouts.py's NAMESPACE_OF) of that plane. The Connect DAGs run on the same node from a stack of their own
# (tests/e2e/conftest.py's `connect_airflow`), through its `spark_k8s_default`.
E2E_REAL_CONN = "spark_k8s_real"
# Seconds per named phase, filled by the e2e tests and printed at the end of the session.
E2E_TIMINGS: dict[str, float] = {}


@contextmanager
def stack_on_postgres(root: Path, *, extra_env: Mapping[str, str] = {}) -> Iterator[AirflowStack]:
    """A stack whose DAGs folder links the e2e DAGs, on a throw-away PostgreSQL (SQLite
    cannot carry two triggerers), launched but not yet waited for: call `wait_healthy`."""
    from testenv.postgres import Postgres

    dags = root / "dags"
    dags.mkdir(parents=True)
    (dags / "e2e").symlink_to(E2E_DAGS, target_is_directory=True)
    with Postgres() as postgres:
        env = {
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": postgres.sqlalchemy_url,
            "AIRFLOW__CORE__PARALLELISM": "16",
            **extra_env,
        }
        stack = launch_stack(root / "home", dags, extra_env=env)
        try:
            yield stack
        finally:
            stack.stop()
