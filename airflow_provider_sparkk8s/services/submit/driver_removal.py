"""Deleting a driver and what it uploaded: the one way every path removes a driver.

The driver pod's deletion takes what the submission created in the cluster (owner
references take its ConfigMaps and Service; Spark's driver owns its executors), but no owner
reference reaches the upload storage: its `spark-upload-<uuid>/` folders are removed here,
right after the pod. Which folders: those the submission wrote, when the caller knows them
(the task that submitted, or adopted, the driver), else read back from the driver's
spark.properties; that read comes before the deletion, because the ConfigMap goes with
the pod. Every path goes through `delete_driver` (sync) or `adelete_driver` (the trigger's),
which send the same requests (`removing_pod`, one decision path) and differ only in how:
a kill, Airflow's execution_timeout in a worker or while deferred, the startup and run
timeouts, a retry that replaces a driver, and the leftover clean-up.

A kill passes `kill_of_try`: the pod is deleted only while that try still owns it
(`ownership`: a newer try of a cleared task may have adopted it), with its uid and
resourceVersion as preconditions; a spared driver keeps its uploads too.

The storage is the caller's (`RemoveUploads`: the upload storage hook's `remove`): it
needs the connection or the conf that wrote the files.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar

from airflow_provider_sparkk8s import objects
from airflow_provider_sparkk8s.errors import KubeApiError
from airflow_provider_sparkk8s.monitoring.reducer import Pod
from airflow_provider_sparkk8s.records import record
from airflow_provider_sparkk8s.services.pods import pod_requests as requests
from airflow_provider_sparkk8s.services.pods.async_pods import AsyncPods
from airflow_provider_sparkk8s.services.pods.driver_pods import DriverPods
from airflow_provider_sparkk8s.services.pods.pod_requests import Operation
from airflow_provider_sparkk8s.submission.driver_args import main_resource_of
from airflow_provider_sparkk8s.submission.upload_plan import uploaded_dirs_in

if TYPE_CHECKING:
    from airflow_provider_sparkk8s.services.submit.submission import Log

# (the upload folders, the conf that names their storage) -> the folders that could not go
RemoveUploads = Callable[[Sequence[str], Mapping[str, str]], list[str]]
_Remove = TypeVar("_Remove")  # RemoveUploads, or the trigger's awaitable one


@record
class Uploads:
    """A driver's upload folders and the conf their storage is read from."""

    dirs: tuple[str, ...]
    conf: Mapping[str, str]


NO_UPLOADS = Uploads((), {})


class Unguarded:
    """Not a kill: delete whichever try owns the pod."""


UNGUARDED = Unguarded()


def uploads_in(pod: Pod, properties: Mapping[str, str] | None) -> Uploads:
    """The upload folders a driver points at: its spark.properties and its main resource
    (the last container's args: Spark appends its own after a template's side-cars)."""
    if properties is None:
        return NO_UPLOADS
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    main = main_resource_of(containers[-1].get("args") or [])
    return Uploads(uploaded_dirs_in(properties, main), properties)


def read_uploads(pods: DriverPods, pod: Pod, log: Log) -> Uploads:
    """A driver's uploads, read back from its conf ConfigMap (nothing, with a warning, when
    that read fails: the pod's deletion must not wait on it)."""
    return pods.run(reading_uploads(pod, log))


def reading_uploads(pod: Pod, log: Log) -> Operation[Uploads]:
    """`read_uploads` as requests, for either sender."""
    try:
        return uploads_in(pod, (yield from requests.driver_properties(pod)))
    except KubeApiError as error:
        log.warning(
            "Could not read the conf ConfigMap of %s to find its uploads: %s",
            objects.name(pod),
            error,
        )
        return NO_UPLOADS


def delete_driver(
    pods: DriverPods,
    namespace: str,
    name: str,
    *,
    remove_uploads: RemoveUploads | None,
    log: Log,
    uploads: Uploads | None = None,
    keep_uploads: bool = False,
    why: str = "",
    kill_of_try: int | Unguarded | None = UNGUARDED,
) -> bool:
    """Delete the driver pod `namespace/name`, then its uploads; False when the pod was gone
    (or, for a kill, spared: a newer try owns it).

    `uploads`: what the submission wrote, when known; None reads them from the driver's
    ConfigMap first. `remove_uploads` None: this caller cannot reach the storage (the
    folders are named in the log instead)."""
    removed = pods.run(removing_pod(namespace, name, uploads, kill_of_try, why, log))
    if removed is None:
        return False
    if (remove := _removal(removed.uploads, remove_uploads, keep_uploads, log)) is not None:
        _log_removal(removed.uploads, remove(removed.uploads.dirs, removed.uploads.conf), log)
    return removed.deleted


async def adelete_driver(
    pods: AsyncPods,
    namespace: str,
    name: str,
    *,
    remove_uploads: Callable[[Sequence[str], Mapping[str, str]], Awaitable[list[str]]] | None,
    log: Log,
    keep_uploads: bool = False,
    kill_of_try: int | Unguarded | None = UNGUARDED,
) -> bool:
    """`delete_driver` on the async client (the trigger's kill): the same requests, and the
    uploads always read from the driver's ConfigMap, since a trigger's kwargs carry no
    conf."""
    removed = await pods.run(removing_pod(namespace, name, None, kill_of_try, "", log))
    if removed is None:
        return False
    if (remove := _removal(removed.uploads, remove_uploads, keep_uploads, log)) is not None:
        _log_removal(removed.uploads, await remove(removed.uploads.dirs, removed.uploads.conf), log)
    return removed.deleted


@record
class Removed:
    """The pod's part of a removal done: whether it was deleted (False: it was gone), and
    the uploads still to remove."""

    deleted: bool
    uploads: Uploads


def removing_pod(
    namespace: str,
    name: str,
    uploads: Uploads | None,
    kill_of_try: int | Unguarded | None,
    why: str,
    log: Log,
) -> Operation[Removed | None]:
    """The one decision path of a driver's deletion, as requests: its uploads read first
    (when not known: the ConfigMap goes with the pod), then the delete, guarded for a kill.
    None: a kill spared it (a newer try owns it)."""
    if uploads is None:
        pod = yield from requests.get_pod(namespace, name)
        uploads = NO_UPLOADS if pod is None else (yield from reading_uploads(pod, log))
    suffix = f" ({why})" if why else ""
    if isinstance(kill_of_try, Unguarded):
        deleted = yield from requests.delete_pod(namespace, name)
    else:
        spared = yield from requests.delete_if_owned(namespace, name, kill_of_try)
        if spared is not None:
            log.info("Not deleting driver pod %s/%s%s: %s", namespace, name, suffix, spared.reason)
            return None
        deleted = True
    if deleted:
        log.info("Deleted driver pod %s/%s%s", namespace, name, suffix)
    else:
        log.info("Driver pod %s/%s was already gone%s", namespace, name, suffix)
    return Removed(deleted, uploads)


def _removal(uploads: Uploads, remove: _Remove | None, keep: bool, log: Log) -> _Remove | None:
    """The removal to call now; None when there is nothing to remove, or the uploads stay
    (kept, or no storage to remove them from: said in the log)."""
    if not uploads.dirs:
        return None
    folders = ", ".join(uploads.dirs)
    if keep:
        log.info("Keeping the uploaded files in %s", folders)
    elif remove is None:
        log.warning("The uploaded files in %s stay: no storage to remove them from", folders)
    return None if keep else remove


def _log_removal(uploads: Uploads, left: Sequence[str], log: Log) -> None:
    for folder in left:
        log.warning("Could not remove the uploaded folder %s", folder)
    if not left:
        log.info("Removed the uploaded files in %s", ", ".join(uploads.dirs))
