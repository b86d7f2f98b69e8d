"""Secret confs out of the driver's ConfigMap (submission/secret_confs.py), on plain data:
off by default with spark-submit's ConfigMap unchanged, on with every movable secret in a
Secret and a reference its reader expands, and the keys that cannot move named."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from airflow_provider_sparkk8s.application.policy.redaction import REDACTED, redact_objects
from airflow_provider_sparkk8s.submission import naming, render, secret_confs
from airflow_provider_sparkk8s.submission.conf import MainAppResource
from airflow_provider_sparkk8s.submission.redaction_regex import redaction_pattern

SECRETS = {
    "spark.hadoop.fs.s3a.secret.key": "planted-s3-secret-1",
    "spark.hadoop.fs.s3a.access.key": "planted-s3-access-2",
    "spark.ssl.ui.keyStorePassword": "planted-keystore-3",
    "spark.ssl.rpc.privateKeyPassword": "planted-private-key-9",
    "spark.kubernetes.driverEnv.DB_PASSWORD": "planted-db-4",
    "spark.executorEnv.API_TOKEN": "planted-exec-5",
}
CANNOT_MOVE = {"spark.authenticate.secret": "planted-auth-6"}
NOT_SECRETS = {
    "spark.kubernetes.driver.secretKeyRef.X": "db:password",
    "spark.kubernetes.driver.secrets.creds": "/mnt/creds",
    "spark.kubernetes.authenticate.driver.oauthTokenFile": "/var/token",
    "spark.authenticate.secretBitLength": "256",
    "spark.ssl.enabled": "false",
}
BASE = {
    "spark.master": "k8s://https://kube:6443",
    "spark.kubernetes.namespace": "jobs",
    "spark.kubernetes.container.image": "apache/spark:4.0.0",
    "spark.app.name": "pi",
}


def rendered(extra: dict[str, str], ids: naming.SubmissionIds | None = None):  # type: ignore[no-untyped-def]
    conf = render.prepare(
        {**BASE, **extra},
        main_app_resource=MainAppResource("java", "local:///opt/e.jar"),
        main_class="org.example.Main",
        ids=ids or naming.new_submission_ids(),
    )
    return render.render(conf)


def properties(result) -> str:  # type: ignore[no-untyped-def]
    return result.resources[-1]["data"]["spark.properties"]


def spark_container(result) -> dict:  # type: ignore[no-untyped-def]
    return result.driver_pod["spec"]["containers"][-1]


def test_off_by_default_the_configmap_is_spark_submits() -> None:
    ids = naming.new_submission_ids()
    plain = rendered({**SECRETS, **CANNOT_MOVE}, ids)
    off = rendered({**SECRETS, **CANNOT_MOVE, secret_confs.ENABLED_KEY: "false"}, ids)
    assert [o["kind"] for o in plain.objects] == ["Pod", "Service", "NetworkPolicy", "ConfigMap"]
    for value in {**SECRETS, **CANNOT_MOVE}.values():
        assert value in properties(plain)
    # `false` changes nothing but its own line.
    line = f"{secret_confs.ENABLED_KEY}=false\n"
    assert properties(off).replace(line, "") == properties(plain)
    assert off.driver_pod == plain.driver_pod
    assert plain.secret_confs_in_clear == tuple(sorted({**SECRETS, **CANNOT_MOVE}))


def test_on_every_movable_secret_leaves_the_configmap_and_the_pod() -> None:
    result = rendered({**SECRETS, **CANNOT_MOVE, **NOT_SECRETS, secret_confs.ENABLED_KEY: "true"})
    secret = result.pre_resources[0]
    name = secret["metadata"]["name"]
    assert secret["kind"] == "Secret" and name.endswith("-secret-confs")
    assert {k: base64.b64decode(v).decode() for k, v in secret["data"].items()} == SECRETS
    others = json.dumps([o for o in result.objects if o is not secret])
    for value in SECRETS.values():
        assert value not in others
    text = properties(result)
    assert (
        "spark.hadoop.fs.s3a.secret.key=${env.SPARKK8S_CONF_SPARK_HADOOP_FS_S3A_SECRET_KEY}" in text
    )
    assert (
        "spark.ssl.ui.keyStorePassword=${env\\:SPARKK8S_CONF_SPARK_SSL_UI_KEYSTOREPASSWORD}" in text
    )
    assert "spark.kubernetes.driverEnv.DB_PASSWORD=${env\\:DB_PASSWORD}" in text
    # Executors get the same env from the Secret, through Spark's own secretKeyRef.
    assert (
        "spark.kubernetes.executor.secretKeyRef.SPARKK8S_CONF_SPARK_HADOOP_FS_S3A_SECRET_KEY="
        f"{name}\\:spark.hadoop.fs.s3a.secret.key" in text
    )
    assert (
        f"spark.kubernetes.executor.secretKeyRef.API_TOKEN={name}\\:spark.executorEnv.API_TOKEN"
        in text
    )
    assert "\nspark.executorEnv.API_TOKEN=" not in text
    env = {e["name"]: e for e in spark_container(result)["env"]}
    assert env["DB_PASSWORD"] == {
        "name": "DB_PASSWORD",
        "valueFrom": {
            "secretKeyRef": {"key": "spark.kubernetes.driverEnv.DB_PASSWORD", "name": name}
        },
    }
    assert env["SPARKK8S_CONF_SPARK_HADOOP_FS_S3A_ACCESS_KEY"]["valueFrom"]["secretKeyRef"] == {
        "key": "spark.hadoop.fs.s3a.access.key",
        "name": name,
    }
    # What no reader expands stays, and is named; what is no secret is left alone.
    assert "spark.authenticate.secret=planted-auth-6" in text
    assert result.secret_confs_in_clear == ("spark.authenticate.secret",)
    for key, value in NOT_SECRETS.items():
        assert result.system_properties[key] == value
    # The shell's uploader still reads the real values.
    assert result.system_properties["spark.hadoop.fs.s3a.secret.key"] == "planted-s3-secret-1"


def test_on_with_nothing_movable_adds_no_secret() -> None:
    result = rendered({**CANNOT_MOVE, secret_confs.ENABLED_KEY: "true"})
    assert [o["kind"] for o in result.pre_resources] == []
    assert result.secret_confs_in_clear == ("spark.authenticate.secret",)


def test_spark_redacted_tokens_are_not_secrets_in_clear() -> None:
    result = rendered({"spark.kubernetes.authenticate.submission.oauthToken": "planted-oauth-7"})
    assert "planted-oauth-7" not in json.dumps(result.objects)
    assert result.secret_confs_in_clear == ()


def test_the_option_is_a_boolean() -> None:
    with pytest.raises(Exception, match=secret_confs.ENABLED_KEY.replace(".", r"\.")):
        rendered({**SECRETS, secret_confs.ENABLED_KEY: "yes"})


def test_env_names_never_collide() -> None:
    result = rendered(
        {
            "spark.hadoop.a.b.secret": "planted-a",
            "spark.hadoop.a_b.secret": "planted-b",
            secret_confs.ENABLED_KEY: "true",
        }
    )
    names = [e["name"] for e in spark_container(result)["env"] if e["name"].startswith("SPARKK8S_")]
    assert names == [
        "SPARKK8S_CONF_SPARK_HADOOP_A_B_SECRET",
        "SPARKK8S_CONF_SPARK_HADOOP_A_B_SECRET_2",
    ]


def test_a_driver_env_that_is_no_env_name_stays_and_is_named() -> None:
    result = rendered(
        {"spark.kubernetes.driverEnv.MY-PASSWORD": "p", secret_confs.ENABLED_KEY: "true"}
    )
    assert result.secret_confs_in_clear == ("spark.kubernetes.driverEnv.MY-PASSWORD",)


def test_the_user_redaction_regex_decides_what_looks_secret() -> None:
    conf = {"spark.redaction.regex": "(?i)internal", "spark.internal.endpoint": "planted-e"}
    result = rendered(
        {**conf, "spark.hadoop.my.internal": "planted-h", secret_confs.ENABLED_KEY: "true"}
    )
    assert result.secret_confs_in_clear == ("spark.internal.endpoint",)
    assert "planted-h" not in properties(result)


def test_dry_runs_redact_the_secret() -> None:
    result = rendered({**SECRETS, secret_confs.ENABLED_KEY: "true"})
    redacted = redact_objects(result.objects, redaction_pattern(result.system_properties))
    assert set(redacted[0]["data"].values()) == {REDACTED}


def test_the_warning_names_keys_never_values() -> None:
    off = secret_confs.in_clear_warning(("spark.a.secret", "spark.b.token"), False, "cm", "jobs")
    assert off is not None
    assert "spark.a.secret, spark.b.token" in off and "namespace 'jobs'" in off
    assert f"set {secret_confs.ENABLED_KEY}=true" in off
    on = secret_confs.in_clear_warning(("spark.authenticate.secret",), True, "cm", "jobs")
    assert on is not None and "cannot move them" in on
    assert secret_confs.in_clear_warning((), False, "cm", "jobs") is None


def test_every_env_entry_of_a_moved_driver_env_comes_from_the_secret() -> None:
    """A template's variable of the same name comes first; the driverEnv value after it must
    not stay behind in the pod spec."""
    container: dict[str, Any] = {
        "name": "spark-kubernetes-driver",
        "env": [
            {"name": "DB_PASSWORD", "value": "from-template"},
            {"name": "DB_PASSWORD", "value": "planted-db-8"},
            {"name": "OTHER", "value": "kept"},
        ],
    }
    ref = {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"key": "k", "name": "s"}}}
    extra = {"name": "SPARKK8S_CONF_X", "valueFrom": {"secretKeyRef": {"key": "x", "name": "s"}}}
    result = secret_confs.with_env_from_secret(container, (ref, extra))
    assert result["env"] == [ref, ref, {"name": "OTHER", "value": "kept"}, extra]
    assert container["env"][1]["value"] == "planted-db-8"  # the input is not changed


def test_a_hadoop_azure_account_key_moves_too() -> None:
    """Spark's default redaction regex misses `fs.azure.account.key.<host>`; ours masks it,
    so it leaves the ConfigMap like the other `spark.hadoop.*` secrets."""
    key = "spark.hadoop.fs.azure.account.key.acct.dfs.core.windows.net"
    result = rendered({key: "planted-azure-7", secret_confs.ENABLED_KEY: "true"})
    assert "planted-azure-7" not in properties(result)
    assert f"{key}=${{env.SPARKK8S_CONF_" in properties(result)
    assert result.objects[0]["kind"] == "Secret"
