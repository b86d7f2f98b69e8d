"""What a clear means, on plain pod dicts (issue 29): `reattach.decide` with the DAG run's
clear number and the try number, and `ownership`'s adoption mark and kill decision."""

from __future__ import annotations

from typing import Any

from airflow_provider_sparkk8s.application.task.ownership import (
    ADOPTED_BY_TRY_ANNOTATION,
    Delete,
    Spare,
    claim_patch,
    kill_decision,
    needs_claim,
    owning_try,
)
from airflow_provider_sparkk8s.application.task.reattach import Adopt, SubmitNew, decide
from airflow_provider_sparkk8s.application.task.task_identity import (
    CLEAR_NUMBER_LABEL,
    SUBMISSION_LABEL,
    TRY_NUMBER_LABEL,
    TaskInstanceRef,
    clear_number_of,
    driver_labels,
)
from testenv.fakes import driver_status

RUNNING = driver_status("running")
SUCCEEDED = driver_status("finished")


def driver(
    number: int,
    *,
    try_number: int = 1,
    clear: int | None = 0,
    status: dict[str, Any] = RUNNING,
    deleting: bool = False,
    adopted_by: int | None = None,
) -> dict[str, Any]:
    labels = {
        "spark-role": "driver",
        SUBMISSION_LABEL: str(number),
        TRY_NUMBER_LABEL: str(try_number),
    }
    if clear is not None:
        labels[CLEAR_NUMBER_LABEL] = str(clear)
    metadata: dict[str, Any] = {
        "name": f"a-{number}-driver",
        "uid": f"uid-{number}",
        "resourceVersion": "41",
        "labels": labels,
    }
    if adopted_by is not None:
        metadata["annotations"] = {ADOPTED_BY_TRY_ANNOTATION: str(adopted_by)}
    if deleting:
        metadata["deletionTimestamp"] = "2026-12-01T16:00:00Z"
    return {"metadata": metadata, "spec": {"nodeName": "n"}, "status": status}


# ---------------------------------------------------------------- the decision


def test_a_cleared_try_never_adopts_the_live_driver_of_the_earlier_clear():
    """New try first: the old trigger has not killed its driver yet. The new try deletes it
    (as the kill will), waits for it to go, and submits the next number."""
    old = driver(1, try_number=1, clear=0)
    assert decide([old], clear_number=1, try_number=2) == SubmitNew(
        submission=2, superseded_pods=("a-1-driver",), wait_for_gone=("a-1-driver",)
    )


def test_a_cleared_try_waits_for_the_driver_the_old_kill_is_deleting():
    """Kill first: the old driver is being deleted when the new try looks."""
    old = driver(1, try_number=1, clear=0, deleting=True)
    assert decide([old], clear_number=1, try_number=2) == SubmitNew(
        submission=2, wait_for_gone=("a-1-driver",)
    )


def test_a_cleared_try_whose_old_driver_is_gone_submits_past_its_try_number():
    """The old driver is gone already: the new name is not the old one's (try 2 -> 2)."""
    assert decide([], clear_number=1, try_number=2) == SubmitNew(submission=2)
    finished = driver(1, try_number=1, clear=0, status=SUCCEEDED)
    assert decide([finished], clear_number=1, try_number=3) == SubmitNew(submission=3)


def test_a_retry_of_the_same_clear_adopts_the_live_driver():
    """A worker crash: try 2 of the same clear follows try 1's driver, no second run."""
    pod = driver(1, try_number=1, clear=1)
    decision = decide([pod], clear_number=1, try_number=2)
    assert isinstance(decision, Adopt) and decision.pod is pod and decision.state == "running"


def test_unknown_clear_numbers_adopt_as_before():
    """A pod from before the label, or an Airflow without the count: not superseded."""
    unlabelled = driver(1, clear=None)
    assert isinstance(decide([unlabelled], clear_number=3, try_number=4), Adopt)
    assert isinstance(decide([driver(1, clear=0)], clear_number=None, try_number=2), Adopt)


def test_a_live_driver_of_this_clear_is_adopted_and_the_earlier_clears_one_deleted():
    old, current = driver(1, try_number=1, clear=0), driver(2, try_number=2, clear=1)
    decision = decide([old, current], clear_number=1, try_number=3)
    assert isinstance(decision, Adopt)
    assert decision.pod is current and decision.extra_live_pods == ("a-1-driver",)


def test_reattach_off_with_a_superseded_driver_waits_for_both():
    old, current = driver(1, clear=0), driver(2, try_number=2, clear=1)
    assert decide([old, current], reattach=False, clear_number=1, try_number=3) == SubmitNew(
        submission=3,
        live_pods_to_delete=("a-2-driver",),
        superseded_pods=("a-1-driver",),
        wait_for_gone=("a-2-driver", "a-1-driver"),
    )


def test_the_clear_number_is_a_label_only_when_airflow_gives_one():
    ref = TaskInstanceRef("d", "t", "r", try_number=2, clear_number=1)
    assert driver_labels(ref, 2)[CLEAR_NUMBER_LABEL] == "1"
    assert CLEAR_NUMBER_LABEL not in driver_labels(TaskInstanceRef("d", "t", "r"), 1)
    assert clear_number_of({"metadata": {"labels": driver_labels(ref, 2)}}) == 1


def test_the_clear_number_is_read_from_the_dag_run_of_the_context():
    class TI:
        dag_id, task_id, run_id, map_index, try_number = "d", "t", "r", -1, 3

    class DagRun:
        clear_number = 2

    ref = TaskInstanceRef.from_context({"ti": TI(), "dag_run": DagRun()})
    assert (ref.try_number, ref.clear_number) == (3, 2)
    assert TaskInstanceRef.from_context({"ti": TI()}).clear_number is None
    # Not part of the identity: every try and every clear selects the same pods.
    assert ref.digest == TaskInstanceRef("d", "t", "r").digest


# ---------------------------------------------------------------- ownership and the kill


def test_the_owner_is_the_newest_adopter_else_the_submitter():
    assert owning_try(driver(1, try_number=1)) == 1
    assert owning_try(driver(1, try_number=1, adopted_by=3)) == 3
    assert needs_claim(driver(1, try_number=1), 2)
    assert not needs_claim(driver(1, try_number=2), 2)
    assert not needs_claim(driver(1, try_number=1, adopted_by=2), 2)


def test_the_claim_is_preconditioned_on_the_resource_version_it_read():
    assert claim_patch(driver(1), 2) == {
        "metadata": {
            "resourceVersion": "41",
            "annotations": {ADOPTED_BY_TRY_ANNOTATION: "2"},
        }
    }


def test_a_kill_deletes_its_own_driver_with_uid_and_resource_version_preconditions():
    assert kill_decision(driver(1, try_number=1), 1) == Delete(
        {"preconditions": {"uid": "uid-1", "resourceVersion": "41"}}
    )


def test_a_kill_spares_a_driver_a_newer_try_adopted():
    decision = kill_decision(driver(1, try_number=1, adopted_by=2), 1)
    assert isinstance(decision, Spare)
    assert "adopted by try 2" in decision.reason


def test_a_kill_spares_a_pod_of_that_name_a_newer_try_submitted():
    decision = kill_decision(driver(1, try_number=2), 1)
    assert isinstance(decision, Spare) and "submitted by try 2" in decision.reason


def test_a_kill_leaves_a_gone_or_deleting_pod_alone():
    assert kill_decision(None, 1) == Spare("it is already gone")
    assert kill_decision(driver(1, deleting=True), 1) == Spare("it is already being deleted")


def test_a_kill_that_does_not_know_its_try_still_deletes_with_preconditions():
    """A trigger serialized before try_number was passed: as before, but guarded."""
    assert isinstance(kill_decision(driver(1, try_number=1, adopted_by=2), None), Delete)
