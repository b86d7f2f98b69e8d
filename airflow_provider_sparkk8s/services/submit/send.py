"""Send a rendered submission the way spark-submit's `Client.run` does, and undo it on failure.

The request sequence only: `services.submit.submission` puts the rest of `Client.run` around it
(parse, render, uploads). The sequence: server-side apply the pre-resources; create the
driver pod; re-apply the pre-resources owned by the pod; server-side apply every post-pod
resource (the conf ConfigMap last), owned by the pod with `controller: true`. If any request fails,
everything created so far is deleted (Spark leaves post-resources to the garbage
collector; we delete them too, so nothing is left even where no GC runs) and a
`SubmissionError` names the object, the API's status and reason, and what was removed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping

from airflow_provider_sparkk8s.errors import KubeApiError, KubeConnectionError, SubmissionError
from airflow_provider_sparkk8s.kube.paths import (
    FIELD_MANAGER,
    apply_params,
    object_path,
    resource_path,
)
from airflow_provider_sparkk8s.kube.request import APPLY_PATCH
from airflow_provider_sparkk8s.kube.retries import retry_delay
from airflow_provider_sparkk8s.kube.sync_client import KubeClient
from airflow_provider_sparkk8s.objects import application_id, describe
from airflow_provider_sparkk8s.records import record
from airflow_provider_sparkk8s.submission.render import RenderedSubmission
from airflow_provider_sparkk8s.submission.request_body import json_body

TYPE_CHECKING = False  # typing's, without importing typing (2 ms of the CLI's start)
if TYPE_CHECKING:
    from typing import Any

log = logging.getLogger(__name__)

# fabric8 (and so spark-submit) applies as "fabric8"; ours names us in managedFields.
# Sends of the driver pod's POST when answers are lost (each send is the client's own,
# with its retries of what certainly did not reach the server).
AMBIGUOUS_POST_ATTEMPTS = 4
ROLLBACK_ROUNDS = 4


@record
class SubmissionResult:
    app_id: str
    namespace: str
    driver_pod_name: str
    driver_pod_uid: str
    submission_id: str  # "<namespace>:<driver pod>"
    created: tuple[str, ...]  # "<Kind>/<name>" of every object sent, in order


def _owned_by(obj: Mapping[str, Any], pod: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `obj` whose only owner is the driver pod (Spark replaces the list)."""
    metadata = pod["metadata"]
    owner = {
        "apiVersion": pod.get("apiVersion", "v1"),
        "kind": "Pod",
        "name": metadata["name"],
        "uid": metadata["uid"],
        "controller": True,
    }
    return {**obj, "metadata": {**(obj.get("metadata") or {}), "ownerReferences": [owner]}}


class _Sender:
    """One submission's requests; remembers what exists so a failure can remove it."""

    def __init__(self, client: KubeClient, namespace: str, field_manager: str):
        self.client = client
        self.namespace = namespace
        self.field_manager = field_manager
        self.created: list[Mapping[str, Any]] = []
        self.maybe_created: Mapping[str, Any] | None = None  # a POST whose answer was lost

    def path(self, obj: Mapping[str, Any]) -> str:
        return object_path(obj, self.namespace)

    def apply(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        result = self.client.request(
            "PATCH",
            self.path(obj),
            params=apply_params(self.field_manager, force=True),
            content=json_body(obj),
            content_type=APPLY_PATCH,
        )
        self._remember(obj)
        return result

    def create_pod(self, pod: Mapping[str, Any], body: Mapping[str, Any]) -> dict[str, Any]:
        """POST the driver pod; `body` is the pod as spark-submit posts it
        (`RenderedSubmission.driver_pod_body`). A POST is not repeated by the client once it
        may have reached the server; when its answer is lost (a reset, a timeout, a 5xx) it
        is sent again here under the same name, so the server decides: created now, or 409
        because the first one was. A 409 on a pod carrying this submission's application id
        (a random id, so no other submission's) is that first POST's pod: adopted, never
        created twice. The client's own retry of a POST on a keep-alive connection the server
        reset can meet the same 409."""
        namespace = (pod.get("metadata") or {}).get("namespace") or self.namespace
        path = resource_path("v1", "Pod", namespace)
        ambiguous = False
        for attempt in range(1, AMBIGUOUS_POST_ATTEMPTS + 1):
            try:
                created = self.client.request(
                    "POST", path, content=json_body(body), content_type="application/json"
                )
            except KubeApiError as error:
                if error.status == 409:  # ours after a lost answer, or someone else's
                    created = self._adopt_own_pod(pod, namespace, error)
                elif error.status >= 500 and attempt < AMBIGUOUS_POST_ATTEMPTS:
                    ambiguous = True
                    time.sleep(retry_delay(self.client.retry, attempt))
                    continue
                else:
                    self._forget_if_ambiguous(pod, ambiguous or error.status >= 500)
                    raise
            except KubeConnectionError:
                if attempt == AMBIGUOUS_POST_ATTEMPTS:
                    self._forget_if_ambiguous(pod, True)
                    raise
                ambiguous = True
                time.sleep(retry_delay(self.client.retry, attempt))
                continue
            self._remember(pod)
            return created
        raise AssertionError("unreachable")  # the loop returns or raises

    def _adopt_own_pod(
        self, pod: Mapping[str, Any], namespace: str, conflict: KubeApiError
    ) -> dict[str, Any]:
        """The pod behind a 409 is ours when it carries this submission's application id;
        anything else keeps the 409."""
        name = (pod.get("metadata") or {}).get("name")
        existing = self.client.request("GET", resource_path("v1", "Pod", namespace, name))
        if application_id(existing) != application_id(pod):
            raise conflict
        log.info(
            "driver pod %s/%s was created by a POST whose answer was lost; adopted", namespace, name
        )
        return existing

    def _forget_if_ambiguous(self, pod: Mapping[str, Any], ambiguous: bool) -> None:
        """Giving up on a POST that may have taken: the roll-back must look for the pod."""
        if ambiguous:
            self.maybe_created = pod

    def _remember(self, obj: Mapping[str, Any]) -> None:
        if all(self.path(o) != self.path(obj) for o in self.created):
            self.created.append(obj)

    def roll_back(self) -> tuple[list[str], list[str]]:
        """Delete what this submission created, newest first: (removed, left behind)."""
        removed: list[str] = []
        left: list[str] = []
        if self.maybe_created is not None:
            self._delete_pod_if_ours(self.maybe_created, removed, left)
        for obj in reversed(self.created):
            try:
                self._delete(self.path(obj))
                removed.append(describe(obj))
            except KubeApiError as error:
                if error.status == 404:
                    removed.append(describe(obj))
                else:
                    left.append(f"{describe(obj)} ({_refusal(error)})")
            except KubeConnectionError as error:
                left.append(f"{describe(obj)} ({error})")
        return removed, left

    def _delete(self, path: str, body: Mapping[str, Any] | None = None) -> None:
        """A DELETE is safe to repeat, and a roll-back that gives up leaves objects behind:
        past the client's own retries, throttling (429), 5xx and lost connections get
        ROLLBACK_ROUNDS more rounds before the object is reported as left."""
        for round_ in range(1, ROLLBACK_ROUNDS + 1):
            try:
                self.client.request("DELETE", path, json=body)
                return
            except KubeApiError as error:
                if (error.status != 429 and error.status < 500) or round_ == ROLLBACK_ROUNDS:
                    raise
            except KubeConnectionError:
                if round_ == ROLLBACK_ROUNDS:
                    raise
            time.sleep(retry_delay(self.client.retry, round_ + 2))

    def _delete_pod_if_ours(
        self, pod: Mapping[str, Any], removed: list[str], left: list[str]
    ) -> None:
        """The pod of a POST whose answer never came: deleted if it exists and is ours (by
        uid, so a pod someone else created meanwhile under the name is never touched)."""
        path = self.path(pod)
        try:
            existing = self.client.request("GET", path)
            if application_id(existing) != application_id(pod):
                return
            uid = existing["metadata"]["uid"]
            self._delete(path, {"preconditions": {"uid": uid}})
            removed.append(describe(pod))
        except KubeApiError as error:
            if error.status != 404:
                left.append(f"{describe(pod)} ({_refusal(error)})")
        except KubeConnectionError as error:
            left.append(f"{describe(pod)} ({error})")


def _refusal(error: KubeApiError) -> str:
    """Why a roll-back's request was refused: RBAC's missing permission by name (as the
    error mapping read it from the refusal)."""
    why = f"{error.status} {error.reason}"
    return (
        f"{why}: missing permission to {error.missing_permission}"
        if error.missing_permission
        else why
    )


def _failure(
    sender: _Sender, obj: Mapping[str, Any], action: str, error: KubeApiError
) -> SubmissionError:
    removed, left = sender.roll_back()
    where = f"{describe(obj)} in namespace {sender.namespace!r}"
    message = f"could not {action} {where}: {error.status} {error.reason}: {error.api_message}"
    if error.status == 409 and action == "create":
        message += " (a pod of that name already exists; it was left untouched)"
    if error.status == 404 and "/" in str(obj.get("apiVersion", "")):
        # A custom resource the API server does not serve: its CRD is not installed.
        message += (
            f" (the API server does not serve {obj.get('kind')} of {obj['apiVersion']}: "
            "install its CustomResourceDefinition, e.g. Volcano for a PodGroup, or drop the "
            "feature step that makes it)"
        )
    message += f"; rolled back: {', '.join(removed) or 'nothing had been created'}"
    if left:
        message += f"; could NOT remove: {', '.join(left)}"
    return SubmissionError(message)


def submit(
    client: KubeClient,
    rendered: RenderedSubmission,
    field_manager: str = FIELD_MANAGER,
) -> SubmissionResult:
    """Send every object of `rendered` in spark-submit's order; all or nothing. The driver
    pod's body is `rendered.driver_pod_body`, exactly as spark-submit posts it."""
    sender = _Sender(client, rendered.namespace, field_manager)
    step: tuple[Mapping[str, Any], str] = (rendered.driver_pod, "apply")
    try:
        if rendered.workload is not None:
            # Kueue must find the Workload when the driver pod arrives; Kueue itself makes
            # the pod its owner (a controller reference of ours would make it ignore it).
            step = (rendered.workload, "apply")
            sender.apply(rendered.workload)
        for obj in rendered.pre_resources:
            step = (obj, "apply")
            sender.apply(obj)
        step = (rendered.driver_pod, "create")
        pod = sender.create_pod(rendered.driver_pod, rendered.driver_pod_body)
        for obj in rendered.pre_resources:
            step = (obj, "set the owner of")
            sender.apply(_owned_by(obj, pod))
        for obj in rendered.resources:
            step = (obj, "apply")
            sender.apply(_owned_by(obj, pod))
    except KubeApiError as error:
        raise _failure(sender, step[0], step[1], error) from error
    except BaseException:
        sender.roll_back()  # interrupted or a transport error: still leave nothing behind
        raise
    return SubmissionResult(
        app_id=rendered.app_id,
        namespace=rendered.namespace,
        driver_pod_name=rendered.driver_pod_name,
        driver_pod_uid=pod["metadata"]["uid"],
        submission_id=rendered.submission_id,
        created=tuple(describe(obj) for obj in sender.created),
    )
