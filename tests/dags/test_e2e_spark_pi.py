"""The end-to-end run of the example on the real node (`e2e_spark_pi`, tests/e2e/e2e_dags/
e2e_spark.py) is the example `dags/spark_pi.py`'s task as it stands, but for its connection:
the example's `spark_k8s_default` is not made in the shared e2e stack (only the Connect
DAGs' own stack, tests/e2e/conftest.py's `connect_airflow`, has one)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SAME = (
    "image", "spark_version", "application", "name", "driver_memory", "executor_memory",
    "num_executors", "conf", "deferrable", "following",
)  # fmt: skip  # following: startup_timeout, run_timeout, on_finish_action, ...


def _task(path: Path, dag_id: str):  # type: ignore[no-untyped-def]
    try:
        from airflow.dag_processing.dagbag import DagBag
    except ImportError:  # Airflow 3.0
        from airflow.models.dagbag import DagBag  # type: ignore[no-redef]

    bag = DagBag(dag_folder=str(path))
    assert bag.import_errors == {}
    return bag.dags[dag_id].get_task("spark_pi")


def test_the_real_node_run_is_the_example_but_for_its_connection() -> None:
    example = _task(REPO / "dags" / "spark_pi.py", "spark_pi")
    mirror = _task(REPO / "tests/e2e/e2e_dags/e2e_spark.py", "e2e_spark_pi")
    assert {key: getattr(mirror, key) for key in SAME} == {
        key: getattr(example, key) for key in SAME
    }
    params = example.dag.params
    assert mirror.application_args == [
        str(params["partitions"]),
        str(params["samples_per_partition"]),
    ]
    assert example.application_args == [
        "{{ params.partitions }}",
        "{{ params.samples_per_partition }}",
    ]
    assert (example.kubernetes_conn_id, mirror.kubernetes_conn_id) == (
        "spark_k8s_default",
        "spark_k8s_real",
    )
