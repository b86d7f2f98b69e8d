"""Which try of a task instance owns a driver pod, and whether a try's kill may delete it.

A driver is owned by the try that submitted it (its try-number label), or by the newest try
that adopted it: adoption writes the adopting try into an annotation, with the pod's
resourceVersion as a precondition, so it lands only on the pod the try decided on.

A kill (the trigger's `on_kill`, the operator's) deletes the pod only while its own try
still owns it, and with the pod's uid and resourceVersion as the delete's preconditions: an
adoption that lands between the kill's read and its delete changes the resourceVersion, the
delete is refused (409), and the kill reads again and leaves the pod to the newer try. The
two writes are ordered by the API server, so every interleaving ends in one of two ways:
the kill deleted the pod before any adoption (the new try sees it being deleted and submits
afresh), or the adoption landed first (the kill spares the pod).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_provider_sparkk8s import objects
from airflow_provider_sparkk8s.application.task.task_identity import LABEL_DOMAIN, try_number_of
from airflow_provider_sparkk8s.records import record

ADOPTED_BY_TRY_ANNOTATION = f"{LABEL_DOMAIN}/adopted-by-try"
# A kill reads and deletes again after a refused precondition; each refusal means the pod
# changed in between, and a driver's pod changes a few times in its life, not in a loop.
KILL_ATTEMPTS = 5

Pod = Mapping[str, Any]


def adopted_by(pod: Pod) -> int:
    """The newest try that adopted the pod; 0 when none did."""
    value = objects.annotation(pod, ADOPTED_BY_TRY_ANNOTATION) or ""
    return int(value) if value.isdigit() else 0


def owning_try(pod: Pod) -> int:
    """The try that owns the pod: the newest adopter, else the submitter."""
    return max(try_number_of(pod), adopted_by(pod))


def claim_patch(pod: Pod, try_number: int) -> dict[str, Any]:
    """A JSON merge patch that marks the pod adopted by `try_number`; the resourceVersion
    makes the API server refuse it (409) if the pod changed since it was read."""
    return {
        "metadata": {
            "resourceVersion": objects.resource_version(pod),
            "annotations": {ADOPTED_BY_TRY_ANNOTATION: str(try_number)},
        }
    }


def needs_claim(pod: Pod, try_number: int) -> bool:
    """An adopting try marks the pod unless it owns it already."""
    return owning_try(pod) < try_number


@record
class Delete:
    """Delete with these preconditions (DeleteOptions' body)."""

    body: dict[str, Any]


@record
class Spare:
    """Leave the pod; `reason` completes "Not deleting driver pod <name>: ..."."""

    reason: str


def kill_decision(pod: Pod | None, try_number: int | None) -> Delete | Spare:
    """What the kill of try `try_number` does to `pod` (as just read; None: gone).

    `try_number` None is a kill that does not know its try (a trigger serialized before the
    try was passed): it deletes as before, still guarded by the preconditions. A pod of the
    same name that a newer try submitted after this one's was gone carries the newer try's
    number, so it is spared as an adopted one is.
    """
    if pod is None:
        return Spare("it is already gone")
    if objects.being_deleted(pod):
        return Spare("it is already being deleted")
    owner = owning_try(pod)
    if try_number is not None and owner > try_number:
        how = "adopted by" if adopted_by(pod) == owner else "submitted by"
        return Spare(f"it was {how} try {owner}, which follows it now (this is try {try_number})")
    preconditions = {"uid": objects.uid(pod), "resourceVersion": objects.resource_version(pod)}
    return Delete({"preconditions": {k: v for k, v in preconditions.items() if v}})
