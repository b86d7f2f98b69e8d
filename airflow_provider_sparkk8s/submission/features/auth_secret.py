"""Ours, opt-in: `spark.authenticate`'s secret in a Secret the driver owns, read from files.

On Kubernetes a driver with `spark.authenticate=true` and no secret file draws its own secret
and Spark's BasicExecutorFeatureStep writes it into every executor pod's env as the literal
value of `_SPARK_AUTH_SECRET`: whoever may read pods in the namespace reads the secret. A
literal `spark.authenticate.secret` would sit in the driver's ConfigMap instead. Spark 3.0+
reads the secret from a file when `spark.authenticate.secret.file` is set, and then leaves
the executors' env out. That one key, not the `.driver.file` and `.executor.file` pair that
fall back to it: an executor's first connection to the driver (CoarseGrainedExecutorBackend's
`driverPropsFetcher`, 3.5.9 and 4.3.0 alike) builds its SecurityManager with the plain key and
reads no other: with the pair alone, every executor exited with 1 on the real node.

With `spark.kubernetes.sparkk8s.authenticate.keyFile.enabled=true` (the secure preset
sets it) this step sends a Secret `<app id>-auth` holding 256 random bits drawn by the
submitter for this application only (`SubmissionIds.auth_secret`), before the driver pod
(a pre-resource, then owned by the pod, so it goes with it), mounts it read-only into the
driver, and adds to the driver's conf:
- `spark.authenticate.secret.file`, the mounted file's path;
- `spark.kubernetes.executor.secrets.<secret>=<dir>`, so the driver mounts it into each
  executor at the same path (Spark's executor MountSecretsFeatureStep).
spark.properties then holds paths only, and no pod spec holds the value. The executors
learn the file key before they dial the driver: Spark passes `spark.auth*` keys in their
start-up options. The Secret's name comes from the application id, not the resource prefix,
because Spark names the executors' volume `<secret>-volume`, which must be a DNS label. Pure.
"""

from __future__ import annotations

import base64

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.objects import APP_ID_LABEL
from airflow_provider_sparkk8s.submission import conf_values as cv
from airflow_provider_sparkk8s.submission.conf import DriverConf
from airflow_provider_sparkk8s.submission.conf_values import is_dns1123_label
from airflow_provider_sparkk8s.submission.features._mounts import (
    add_volumes_and_mounts,
    immutable_data_object,
)
from airflow_provider_sparkk8s.submission.spec import FeatureStep, KubeObject, SparkPod, StepResult

ENABLED_KEY = "spark.kubernetes.sparkk8s.authenticate.keyFile.enabled"
NAME = "airflow_provider_sparkk8s.submission.features.auth_secret:step"
SINCE = (0, 0, 0)  # the file keys exist on every line we build (3.0+)

FILE_KEY = "spark.authenticate.secret.file"
EXECUTOR_SECRETS = "spark.kubernetes.executor.secrets."
DATA_KEY = "spark-auth-secret"
MOUNT_DIR = "/opt/spark/auth-secret"
SECRET_FILE = f"{MOUNT_DIR}/{DATA_KEY}"
VOLUME = "spark-auth-secret"


def enabled(conf: cv.ConfLike) -> bool:
    return cv.get_bool(conf, ENABLED_KEY, False)


def secret_name(conf: DriverConf) -> str:
    return f"{conf.app_id}-auth"


def auth_secret(conf: DriverConf) -> KubeObject:
    data = {DATA_KEY: base64.b64encode(conf.ids.auth_secret.encode("ascii")).decode("ascii")}
    secret = immutable_data_object("Secret", secret_name(conf), data)
    secret["metadata"] = {**secret["metadata"], "labels": {APP_ID_LABEL: conf.app_id}}
    secret["type"] = "Opaque"
    return secret


def step(conf: DriverConf, pod: SparkPod) -> StepResult:
    if not enabled(conf):
        return StepResult(pod=pod)
    name = secret_name(conf)
    if not is_dns1123_label(f"{name}-volume"):
        raise SparkConfError(
            "spark.app.id", conf.app_id, "an id that makes '<id>-auth-volume' a DNS-1123 label",
            f"{ENABLED_KEY} names the executors' Secret volume after it",
        )  # fmt: skip
    if not conf.ids.auth_secret:
        raise SparkConfError(
            ENABLED_KEY, "true", "a submission whose ids carry a drawn secret",
            "SubmissionIds.auth_secret is empty (naming.new_submission_ids draws it)",
        )  # fmt: skip
    volume = {"name": VOLUME, "secret": {"secretName": name}}
    mount = {"name": VOLUME, "mountPath": MOUNT_DIR, "readOnly": True}
    return StepResult(
        pod=add_volumes_and_mounts(pod, [volume], [mount]),
        system_properties={
            FILE_KEY: SECRET_FILE,
            EXECUTOR_SECRETS + name: MOUNT_DIR,
        },
        pre_resources=(auth_secret(conf),),
    )


STEP = FeatureStep(NAME, SINCE, step)
