"""Runs one DAG with Airflow's own `dag.test()` in this process, then dumps what the metadata
DB holds for the run (task instances, XComs, rendered fields, triggers) as JSON.

    python run_dag.py <dag file> <dag id> <logical date ISO> <output json>
    python run_dag.py --dump <dag id> <output json>     (only the dump, after another command)

Started by airflow_harness.py in a subprocess with its own AIRFLOW_HOME and SQLite DB.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime
from typing import Any


def dump(dag_id: str) -> dict[str, Any]:
    from airflow.models.renderedtifields import RenderedTaskInstanceFields
    from airflow.models.taskinstance import TaskInstance
    from airflow.models.trigger import Trigger
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        tis = session.query(TaskInstance).filter(TaskInstance.dag_id == dag_id).all()
        xcoms = session.query(XComModel).filter(XComModel.dag_id == dag_id).all()
        rendered = (
            session.query(RenderedTaskInstanceFields)
            .filter(RenderedTaskInstanceFields.dag_id == dag_id)
            .all()
        )
        triggers = session.query(Trigger).all()
        return {
            "task_instances": [
                {
                    "task_id": ti.task_id,
                    "map_index": ti.map_index,
                    "state": str(getattr(ti.state, "value", ti.state)),
                    "try_number": ti.try_number,
                    "next_kwargs": json.dumps(ti.next_kwargs, default=str),
                }
                for ti in tis
            ],
            "xcoms": [
                {
                    "task_id": x.task_id,
                    "map_index": x.map_index,
                    "key": x.key,
                    "raw": json.dumps(x.value, default=str),
                    "value": XComModel.deserialize_value(x),
                }
                for x in xcoms
            ],
            "rendered_fields": [
                {
                    "task_id": r.task_id,
                    "map_index": r.map_index,
                    "raw": json.dumps(r.rendered_fields, default=str),
                }
                for r in rendered
            ],
            "triggers": [
                {"classpath": t.classpath, "raw_kwargs": json.dumps(t.kwargs, default=str)}
                for t in triggers
            ],
        }


def write_dump(dag_id: str, output: str) -> None:
    with open(output, "w") as sink:
        json.dump(dump(dag_id), sink, default=str)


def main() -> int:
    if sys.argv[1] == "--dump":
        write_dump(*sys.argv[2:4])
        return 0
    dag_file, dag_id, logical_date, output = sys.argv[1:5]
    try:
        from airflow.dag_processing.dagbag import DagBag
    except ImportError:  # Airflow 3.0
        from airflow.models.dagbag import DagBag  # type: ignore[no-redef]

    bag = DagBag(dag_folder=dag_file)
    if bag.import_errors:
        print(f"import errors: {bag.import_errors}", flush=True)
        return 3
    # run_after = logical date makes the run id deterministic (manual__<date>), so a second
    # run stands for the same task instances, as a retry after a dead worker does.
    when = datetime.fromisoformat(logical_date)
    bag.dags[dag_id].test(logical_date=when, run_after=when)
    write_dump(dag_id, output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
