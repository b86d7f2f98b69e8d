"""Deleting a driver and what it uploaded: the one way every path removes a driver.

The driver pod's deletion takes what the submission created in the cluster (owner
references take its ConfigMaps and Service; Spark's driver owns its executors), but no owner
reference reaches the upload storage: its `spark-upload-<uuid>/` folders are removed here,
right after the pod. Which folders: those the submission wrote, when the caller knows them
(the task that submitted, or adopted, the driver), else read back from the driver's
spark.properties; that read comes before the deletion, because the ConfigMap goes with
the pod. Every path goes through `delete_driver` (sync) or `adelete_driver` (the trigger's):
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
from dataclasses import dataclass
from typing import cast

from airflow_provider_sparkk8s import objects
from airflow_provider_sparkk8s.errors import KubeApiError
from airflow_provider_sparkk8s.monitoring.reducer import Pod
from airflow_provider_sparkk8s.services.async_pods import AsyncPods, AsyncPodWrites, delete_if_owned
from airflow_provider_sparkk8s.services.pods import DriverPods
from airflow_provider_sparkk8s.services.submission import Log
from airflow_provider_sparkk8s.submission.driver_args import main_resource_of
from airflow_provider_sparkk8s.submission.upload_plan import uploaded_dirs_in

# (the upload folders, the conf that names their storage) -> the folders that could not go
RemoveUploads = Callable[[Sequence[str], Mapping[str, str]], list[str]]


@dataclass(frozen=True)
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
    try:
        return uploads_in(pod, pods.driver_properties(pod))
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
    if uploads is None:
        pod = pods.get(namespace, name)
        uploads = NO_UPLOADS if pod is None else read_uploads(pods, pod, log)
    suffix = f" ({why})" if why else ""
    if isinstance(kill_of_try, Unguarded):
        deleted = pods.delete(namespace, name)
    else:
        spared = pods.delete_if_owned(namespace, name, kill_of_try)
        if spared is not None:
            log.info("Not deleting driver pod %s:%s%s: %s", namespace, name, suffix, spared.reason)
            return False
        deleted = True
    if deleted:
        log.info("Deleted driver pod %s:%s%s", namespace, name, suffix)
    else:
        log.info("Driver pod %s:%s was already gone%s", namespace, name, suffix)
    _remove_uploads(uploads, remove_uploads, keep_uploads, log)
    return deleted


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
    """`delete_driver` on the async client (the trigger's kill): the uploads are always read
    from the driver's ConfigMap, since a trigger's kwargs carry no conf."""
    pod = await pods.get(namespace, name)
    uploads = NO_UPLOADS
    if pod is not None:
        try:
            uploads = uploads_in(pod, await pods.driver_properties(pod))
        except KubeApiError as error:
            log.warning(
                "Could not read the conf ConfigMap of %s to find its uploads: %s", name, error
            )
    if isinstance(kill_of_try, Unguarded):
        deleted = await pods.delete(namespace, name)
    else:
        writes = cast(AsyncPodWrites, pods.client)  # the trigger's AsyncKubeClient
        spared = await delete_if_owned(writes, namespace, name, kill_of_try)
        if spared is not None:
            log.info("Not deleting driver pod %s/%s: %s", namespace, name, spared.reason)
            return False
        deleted = True
    if deleted:
        log.info("Deleted driver pod %s/%s", namespace, name)
    else:
        log.info("Driver pod %s/%s was already gone", namespace, name)
    if uploads.dirs and not keep_uploads and remove_uploads is not None:
        _log_removal(uploads, await remove_uploads(uploads.dirs, uploads.conf), log)
    else:
        _remove_uploads(uploads, None, keep_uploads, log)
    return deleted


def _remove_uploads(uploads: Uploads, remove: RemoveUploads | None, keep: bool, log: Log) -> None:
    if not uploads.dirs:
        return
    folders = ", ".join(uploads.dirs)
    if keep:
        log.info("Keeping the uploaded files in %s", folders)
    elif remove is None:
        log.warning("The uploaded files in %s stay: no storage to remove them from", folders)
    else:
        _log_removal(uploads, remove(uploads.dirs, uploads.conf), log)


def _log_removal(uploads: Uploads, left: Sequence[str], log: Log) -> None:
    for folder in left:
        log.warning("Could not remove the uploaded folder %s", folder)
    if not left:
        log.info("Removed the uploaded files in %s", ", ".join(uploads.dirs))
