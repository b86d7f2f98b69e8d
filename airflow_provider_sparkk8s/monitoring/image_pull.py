"""An image its registry says does not exist: read from a waiting container's message. Pure.

A container whose image cannot be pulled waits with the kubelet's reason `ErrImagePull`
(a pull just failed) or `ImagePullBackOff` (waiting before the next one), and the
kubelet copies the container runtime's error into the waiting message. Most of those
errors pass: a timeout, a DNS failure, a refused connection, a registry's 5xx or 429. One
does not: the registry answered that the image is not there. Another pull gets the same
answer, so waiting out `startup_timeout` (and retrying the task as infrastructure) only
wastes the time; the follower ends the application at the first such answer
(`image_not_found`), as a configuration error.

What counts as the registry's "not found", by runtime (anything else is transient):
- containerd: `failed to resolve reference "REF": REF: not found`: every registry host
  tried answered 404 to the manifest (a mirror's 404 with another host's timeout reads as
  the timeout, not this), and `pull access denied, repository does not exist or may require
  authorization` (a registry that hides missing repositories behind 401/403, as Docker Hub
  does). Only the resolve step is read: containerd's own "not found"s on the node (a
  snapshot, a blob in its content store) say nothing about the registry.
- Docker (cri-dockerd): `manifest for REF not found`, `pull access denied for REF,
  repository does not exist or may require 'docker login'`.
- The OCI distribution spec's error codes, as Docker and CRI-O quote them: `manifest
  unknown` (MANIFEST_UNKNOWN) and `name unknown` (NAME_UNKNOWN).

The kubelet's back-off message (`Back-off pulling image "REF"`) carries the last pull's
error since Kubernetes 1.31 (`Back-off pulling image "REF": ErrImagePull: ...`); a bare one
says nothing, so an older kubelet's back-off alone is transient. The first `ErrImagePull`
carries the error on any kubelet.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from airflow_provider_sparkk8s.monitoring.reducer import ApplicationState, Pod
from airflow_provider_sparkk8s.objects import name as pod_name
from airflow_provider_sparkk8s.records import record

IMAGE_NOT_FOUND = "ImageNotFound"  # the failed state's reason (its kind: configuration_error)
PULL_REASONS = frozenset({"ErrImagePull", "ImagePullBackOff"})

_NOT_FOUND = re.compile(
    "|".join(
        (
            r'failed to resolve reference "[^"]+": [^\s"]+: not found\b',  # containerd
            r"\brepository does not exist\b",  # containerd's and Docker's "pull access denied"
            r"\bmanifest for \S+ not found\b",  # Docker
            r"\bmanifest unknown\b",  # MANIFEST_UNKNOWN
            r"\bname unknown\b",  # NAME_UNKNOWN
        )
    )
)
# What the kubelet and the CRI's gRPC status put before the runtime's own error.
_WRAPPERS = re.compile(
    r'^(?:Back-off pulling image "[^"]*": |ErrImagePull: |rpc error: code = \w+ desc = )+'
)
MESSAGE_MAX = 1000


def registry_said_missing(message: str | None) -> bool:
    """Whether a pull's waiting message holds the registry's definitive "not found"."""
    return bool(message) and _NOT_FOUND.search(message or "") is not None


def runtime_answer(message: str) -> str:
    """The container runtime's error alone, without the kubelet's back-off and the gRPC
    status wrapped around it: what the registry answered, as the runtime tells it."""
    return _WRAPPERS.sub("", message.strip())[:MESSAGE_MAX]


@record(slots=True)
class MissingImage:
    """A container of a pod whose image the registry says does not exist."""

    container: str
    image: str | None  # as the pod names it (the container status's); None if unknown
    answer: str  # the runtime's error: the registry's answer

    def describe(self) -> str:
        image = f'image "{self.image}"' if self.image else "the image"
        return (
            f"{image} of container {self.container} does not exist in its registry "
            f"(fix the image's name or tag, or its pull credentials): {self.answer}"
        )


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _statuses(pod: Pod) -> Iterable[Mapping[str, Any]]:
    status = _dict(pod.get("status"))
    for key in ("initContainerStatuses", "containerStatuses"):
        listed = status.get(key)
        for entry in listed if isinstance(listed, list) else ():
            yield _dict(entry)


def missing_image(pod: Pod) -> MissingImage | None:
    """The first container of `pod` waiting on a pull its registry answered "not found"."""
    for status in _statuses(pod):
        waiting = _dict(_dict(status.get("state")).get("waiting"))
        message = waiting.get("message")
        if waiting.get("reason") not in PULL_REASONS or not isinstance(message, str):
            continue
        if registry_said_missing(message):
            image = status.get("image")
            return MissingImage(
                container=str(status.get("name") or "?"),
                image=image if isinstance(image, str) and image else None,
                answer=runtime_answer(message),
            )
    return None


def image_not_found(state: ApplicationState, pods: Iterable[Pod]) -> ApplicationState:
    """`state`, or its failure when its driver waits on an image the registry says does not
    exist (reason `ImageNotFound`). Only a pending driver with a pull problem is read."""
    if not (state.problem and state.reason in PULL_REASONS and state.driver_pod):
        return state
    driver = next((pod for pod in pods if pod_name(pod) == state.driver_pod), None)
    missing = None if driver is None else missing_image(driver)
    if missing is None:
        return state
    return ApplicationState(
        state="failed",
        reason=IMAGE_NOT_FOUND,
        message=missing.describe(),
        driver_pod=state.driver_pod,
        executors=state.executors,
    )
