"""LocalDirsFeatureStep: scratch space for the driver (SPARK_LOCAL_DIRS).

If Spark's container already mounts volumes named `spark-local-dir-*` (from a template or a
user volume), their mount paths are the local dirs, in a random order. Otherwise the dirs
are the first defined of the submitter's `SPARK_LOCAL_DIRS` environment variable (even
empty), `spark.local.dir`, or `/var/data/spark-<uuid>`, split on `,`, each backed by an
emptyDir (in memory with `spark.kubernetes.local.dirs.tmpfs=true`). Either way the list is
shuffled on each submission, and the volumes are numbered in the shuffled order: real
spark-submit 3.5.9, 4.0.5, 4.1.4, 4.2.1 and 4.3.0 each gave three different orders of six
configured dirs in three runs. Ours is drawn from `conf.ids.shuffle_seed`, so one
submission renders the same objects every time it is rendered.
"""

from __future__ import annotations

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.conf import DriverConf
from airflow_provider_sparkk8s.submission.conf_values import get_bool
from airflow_provider_sparkk8s.submission.features._mounts import add_volumes_and_mounts
from airflow_provider_sparkk8s.submission.java_text import java_split
from airflow_provider_sparkk8s.submission.spec import FeatureStep, KubeObject, SparkPod, StepResult

SPARK_CLASS = "org.apache.spark.deploy.k8s.features.LocalDirsFeatureStep"
SINCE = (2, 3, 0)

VOLUME_PREFIX = "spark-local-dir-"
ENV_LOCAL_DIRS = "SPARK_LOCAL_DIRS"
LOCAL_DIR_KEY = "spark.local.dir"
TMPFS_KEY = "spark.kubernetes.local.dirs.tmpfs"


def default_local_dir(conf: DriverConf) -> str:
    if not conf.ids.local_dir_uuids:
        raise ValueError("SubmissionIds.local_dir_uuids must hold a UUID for the default dir")
    return f"/var/data/spark-{conf.ids.local_dir_uuids[0]}"


def configured_local_dirs(conf: DriverConf, taken_paths: set[str]) -> list[str]:
    """The configured dirs; refuses what the API server would (empty or repeated paths)."""
    source, value = ENV_LOCAL_DIRS, conf.local.environment.get(ENV_LOCAL_DIRS)
    if value is None:
        source, value = LOCAL_DIR_KEY, conf.get(LOCAL_DIR_KEY)
    if value is None:
        return [default_local_dir(conf)]
    dirs = java_split(value, ",")
    for path in dirs:
        if not path:
            raise SparkConfError(source, value, "comma-separated non-empty directory paths")
        if dirs.count(path) > 1 or path in taken_paths:
            raise SparkConfError(
                source, value, "directories not mounted twice", f"{path!r} is already mounted"
            )
    return dirs


def shuffled(dirs: list[str], seed: int) -> list[str]:
    """The dirs in this submission's random order, as a new list."""
    if len(dirs) < 2:
        return list(dirs)  # one order: random (~1 ms of sparkk8s-submit's start) not imported
    import random

    order = list(dirs)
    random.Random(seed).shuffle(order)
    return order


def step(conf: DriverConf, pod: SparkPod) -> StepResult:
    existing = [
        mount.get("mountPath", "")
        for mount in pod.container.get("volumeMounts") or ()
        if str(mount.get("name", "")).startswith(VOLUME_PREFIX)
    ]
    volumes: list[KubeObject] = []
    mounts: list[KubeObject] = []
    if existing:
        local_dirs = shuffled(existing, conf.ids.shuffle_seed)
    else:
        taken = {str(mount.get("mountPath")) for mount in pod.container.get("volumeMounts") or ()}
        local_dirs = shuffled(configured_local_dirs(conf, taken), conf.ids.shuffle_seed)
        empty_dir = {"medium": "Memory"} if get_bool(conf, TMPFS_KEY, False) else {}
        for index, path in enumerate(local_dirs, start=1):
            name = f"{VOLUME_PREFIX}{index}"
            volumes.append({"name": name, "emptyDir": dict(empty_dir)})
            mounts.append({"name": name, "mountPath": path})
    env = [{"name": ENV_LOCAL_DIRS, "value": ",".join(local_dirs)}]
    return StepResult(pod=add_volumes_and_mounts(pod, volumes, mounts, env))


STEP = FeatureStep(SPARK_CLASS, SINCE, step)
