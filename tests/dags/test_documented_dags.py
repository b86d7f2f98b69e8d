"""The DAGs the README and docs/quickstart.md show for `make spark-plane` run as written there:
they parse, and the driver and both executors fit on the plane's node, which has this
machine's 2 CPUs (issue 46: at Spark's whole core a pod, one of the two executors never ran).
The requests are worked out as the submission does: the driver's `request.cores`, else its
cores; the executors' as submission/executor_resources.py works them out."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

from airflow_provider_sparkk8s.objects import quantity
from airflow_provider_sparkk8s.operators.spark_k8s import SparkK8sSubmitOperator
from airflow_provider_sparkk8s.submission.executor_resources import executor_resources

REPO = Path(__file__).resolve().parents[2]
NODE_CPUS = 2.0  # make spark-plane's node: the machine's 2 CPUs
SPARK_LINE = "4.3.0"  # the image sparkk8s/spark:4.3.0


def python_blocks(text: str) -> list[str]:
    """The ```python blocks of a Markdown text, a list item's indentation taken off."""
    blocks = re.findall(r"^( *)```python\n(.*?)^ *```", text, flags=re.DOTALL | re.MULTILINE)
    return [textwrap.dedent(block) for _, block in blocks]


def requested_cpus(task: SparkK8sSubmitOperator) -> float:
    conf: dict[str, Any] = {key: str(value) for key, value in (task.conf or {}).items()}
    if task.num_executors is not None:
        conf["spark.executor.instances"] = str(task.num_executors)
    executors = int(conf.get("spark.executor.instances", "2"))
    driver = conf.get(
        "spark.kubernetes.driver.request.cores",
        str(task.driver_cores or conf.get("spark.driver.cores", "1")),
    )
    executor = executor_resources(conf, SPARK_LINE).cpu_request
    return quantity(driver) + executors * quantity(executor)


def readme_task(tmp_path: Path) -> SparkK8sSubmitOperator:
    try:
        from airflow.dag_processing.dagbag import DagBag
    except ImportError:  # Airflow 3.0
        from airflow.models.dagbag import DagBag  # type: ignore[no-redef]

    readme = (REPO / "README.md").read_text()
    (block,) = python_blocks(readme.split("## A DAG", 1)[1].split("\n## ", 1)[0])
    (tmp_path / "readme_dag.py").write_text(block)
    bag = DagBag(dag_folder=str(tmp_path))
    assert bag.import_errors == {}
    (dag,) = bag.dags.values()
    (task,) = dag.tasks
    assert isinstance(task, SparkK8sSubmitOperator)
    return task


def test_the_readme_dag_fits_make_spark_plane_s_node(tmp_path: Path) -> None:
    task = readme_task(tmp_path)
    assert task.image == f"sparkk8s/spark:{SPARK_LINE}" and task.num_executors == 2
    assert requested_cpus(task) <= NODE_CPUS


def test_the_quickstart_s_local_dag_fits_make_spark_plane_s_node() -> None:
    blocks = python_blocks((REPO / "docs" / "quickstart.md").read_text())
    local = [block for block in blocks if "sparkk8s/spark:" in block]
    (block,) = local
    namespace: dict[str, Any] = {"SparkK8sSubmitOperator": SparkK8sSubmitOperator}
    exec("task = " + block.strip(), namespace)  # the documented code, as written
    task = namespace["task"]
    assert task.conf["spark.executor.instances"] == "2"
    assert requested_cpus(task) <= NODE_CPUS


def test_at_spark_s_whole_core_a_pod_the_second_executor_would_not_fit() -> None:
    # What the check above guards against: the quickstart as it was.
    task = SparkK8sSubmitOperator(
        task_id="t", application="local:///x.jar", conf={"spark.executor.instances": "2"}
    )
    assert requested_cpus(task) == 3.0 > NODE_CPUS
