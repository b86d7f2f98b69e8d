"""Ours, opt-in: `spark.authenticate`'s secret in a Secret the driver owns, never a literal.

On Kubernetes a driver with `spark.authenticate=true` and no secret file draws its own secret,
and Spark's BasicExecutorFeatureStep writes it into every executor pod's env as the literal
value of `_SPARK_AUTH_SECRET`: whoever may read pods in the namespace reads the secret. A
literal `spark.authenticate.secret` would sit in the driver's ConfigMap instead.

With `spark.kubernetes.sparkk8s.authenticate.keyFile.enabled=true` (the secure preset sets
it) this step sends a Secret `<app id>-auth` holding 256 random bits drawn by the submitter
for this application only (`SubmissionIds.auth_secret`), before the driver pod (a
pre-resource, then owned by the pod, so it goes with it), and:
- the driver reads it from a file: the Secret mounted read-only, and
  `spark.authenticate.secret.file` naming it (its SecurityManager keys on the file's bytes,
  base64-encoded);
- each executor gets `_SPARK_AUTH_SECRET`, the variable Spark reads first, from the Secret
  (`spark.kubernetes.executor.secretKeyRef._SPARK_AUTH_SECRET`) holding those same base64
  bytes. With the file key set, BasicExecutorFeatureStep writes no literal of its own.

Not the executor file (`spark.authenticate.secret.executor.file`, mounted): an executor's
first connection to the driver (KubernetesExecutorBackend's `driverPropsFetcher`) has only
its start-up options, and SecurityManager reads a secret file only when `spark.master` names
Kubernetes, which those options never carry; on the real node every executor then failed
with "A secret key must be specified via the spark.authenticate.secret config" (3.5.9, 4.3.0).
spark.properties holds a path and a reference; no pod spec holds the value. Pure.
"""

from __future__ import annotations

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.objects import APP_ID_LABEL
from airflow_provider_sparkk8s.submission import conf_values as cv
from airflow_provider_sparkk8s.submission.conf import DriverConf
from airflow_provider_sparkk8s.submission.features._mounts import (
    add_volumes_and_mounts,
    immutable_data_object,
)
from airflow_provider_sparkk8s.submission.spec import FeatureStep, KubeObject, SparkPod, StepResult

ENABLED_KEY = "spark.kubernetes.sparkk8s.authenticate.keyFile.enabled"
NAME = "airflow_provider_sparkk8s.submission.features.auth_secret:step"
SINCE = (0, 0, 0)  # the file key exists on every line we build (3.0+)

FILE_KEY = "spark.authenticate.secret.file"
EXECUTOR_ENV = "_SPARK_AUTH_SECRET"  # Spark's SecurityManager.ENV_AUTH_SECRET
EXECUTOR_KEY_REF = f"spark.kubernetes.executor.secretKeyRef.{EXECUTOR_ENV}"
FILE_DATA_KEY = "spark-auth-secret"  # the driver's file: the drawn secret
ENV_DATA_KEY = "spark-auth-secret-base64"  # the executors' env: the file's bytes, base64
MOUNT_DIR = "/opt/spark/auth-secret"
SECRET_FILE = f"{MOUNT_DIR}/{FILE_DATA_KEY}"
VOLUME = "spark-auth-secret"


def enabled(conf: cv.ConfLike) -> bool:
    return cv.get_bool(conf, ENABLED_KEY, False)


def secret_name(conf: DriverConf) -> str:
    return f"{conf.app_id}-auth"


def _b64(data: bytes) -> str:
    import base64  # here: only an opted-in submission needs it (start-up time)

    return base64.b64encode(data).decode("ascii")


def auth_secret(conf: DriverConf) -> KubeObject:
    drawn = conf.ids.auth_secret.encode("ascii")
    # The env value is what Spark derives from the file (Base64 of its bytes), so the
    # executors' key equals the driver's.
    data = {FILE_DATA_KEY: _b64(drawn), ENV_DATA_KEY: _b64(_b64(drawn).encode("ascii"))}
    secret = immutable_data_object("Secret", secret_name(conf), data)
    secret["metadata"] = {**secret["metadata"], "labels": {APP_ID_LABEL: conf.app_id}}
    secret["type"] = "Opaque"
    return secret


def step(conf: DriverConf, pod: SparkPod) -> StepResult:
    if not enabled(conf):
        return StepResult(pod=pod)
    if not conf.ids.auth_secret:
        raise SparkConfError(
            ENABLED_KEY, "true", "a submission whose ids carry a drawn secret",
            "SubmissionIds.auth_secret is empty (naming.new_submission_ids draws it)",
        )  # fmt: skip
    name = secret_name(conf)
    items = [{"key": FILE_DATA_KEY, "path": FILE_DATA_KEY}]
    volume = {"name": VOLUME, "secret": {"secretName": name, "items": items}}
    mount = {"name": VOLUME, "mountPath": MOUNT_DIR, "readOnly": True}
    return StepResult(
        pod=add_volumes_and_mounts(pod, [volume], [mount]),
        system_properties={FILE_KEY: SECRET_FILE, EXECUTOR_KEY_REF: f"{name}:{ENV_DATA_KEY}"},
        pre_resources=(auth_secret(conf),),
    )


STEP = FeatureStep(NAME, SINCE, step)
