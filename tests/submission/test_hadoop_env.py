"""`${env.NAME}` in spark.hadoop.* values, expanded for our upload as Hadoop expands it."""

from __future__ import annotations

from airflow_provider_sparkk8s.submission.hadoop_env import expand_env_references

KEY = "spark.hadoop.fs.azure.account.key.acct.dfs.core.windows.net"


def test_a_set_variable_is_read_from_the_environment() -> None:
    conf = {KEY: "${env.AZURE_ACCOUNT_KEY}", "spark.app.name": "etl"}
    expanded = expand_env_references(conf, {"AZURE_ACCOUNT_KEY": "k3y"})
    assert expanded == {KEY: "k3y", "spark.app.name": "etl"}
    assert conf[KEY] == "${env.AZURE_ACCOUNT_KEY}"  # the caller's conf is left as it was


def test_references_inside_a_value_and_unset_ones() -> None:
    conf = {"spark.hadoop.fs.s3a.endpoint": "http://${env.HOST}:${env.PORT}/"}
    assert expand_env_references(conf, {"HOST": "minio"}) == {
        "spark.hadoop.fs.s3a.endpoint": "http://minio:${env.PORT}/"
    }


def test_only_hadoop_keys_and_only_the_env_form() -> None:
    conf = {
        "spark.kubernetes.driverEnv.TOKEN": "${env.TOKEN}",
        "spark.hadoop.fs.azure.sas.fixed.token": "${env:TOKEN}",
    }
    assert expand_env_references(conf, {"TOKEN": "t"}) == conf
