import base64
import copy

import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.conf import LocalInputs
from airflow_provider_sparkk8s.submission.features import hadoop_conf_driver, kerberos_conf_driver
from airflow_provider_sparkk8s.submission.spec import SparkPod
from tests.support.driver_conf import PREFIX, make_conf
from tests.support.hadoop_conf import HADOOP_DIR, KERBEROS_SITE, hadoop_local

KRB5 = b"[libdefaults]\n default_realm = EXAMPLE.COM\n"
KEYTAB = bytes(range(256))


def kerberos_local(**extra_files):
    return LocalInputs(files={"/etc/krb5.conf": KRB5, "/keys/alice.keytab": KEYTAB, **extra_files})


def test_krb5_file_keytab_and_principal():
    conf = make_conf(
        {
            "spark.kubernetes.kerberos.krb5.path": "/etc/krb5.conf",
            "spark.kerberos.keytab": "/keys/alice.keytab",
            "spark.kerberos.principal": "alice@EXAMPLE.COM",
        },
        local=kerberos_local(),
    )
    result = kerberos_conf_driver.step(conf, SparkPod.initial())
    assert result.pod.pod["spec"]["volumes"] == [
        {
            "name": "krb5-file",
            "configMap": {
                "name": f"{PREFIX}-krb5-file",
                "items": [{"key": "krb5.conf", "path": "krb5.conf"}],
            },
        },
        {"name": "kerberos-keytab", "secret": {"secretName": f"{PREFIX}-kerberos-keytab"}},
    ]
    assert result.pod.container["volumeMounts"] == [
        {"name": "krb5-file", "mountPath": "/etc/krb5.conf", "subPath": "krb5.conf"},
        {"name": "kerberos-keytab", "mountPath": "/mnt/secrets/kerberos-keytab"},
    ]
    assert "env" not in result.pod.container
    assert dict(result.system_properties) == {
        "spark.kerberos.keytab": "/mnt/secrets/kerberos-keytab/alice.keytab"
    }
    assert list(result.resources) == [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"{PREFIX}-krb5-file"},
            "immutable": True,
            "data": {"krb5.conf": KRB5.decode()},
        },
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": f"{PREFIX}-kerberos-keytab"},
            "immutable": True,
            "data": {"alice.keytab": base64.b64encode(KEYTAB).decode()},
        },
    ]


def test_krb5_config_map_and_existing_token_secret():
    conf = make_conf(
        {
            "spark.kubernetes.kerberos.krb5.configMapName": "krb5",
            "spark.kubernetes.kerberos.tokenSecret.name": "tokens",
            "spark.kubernetes.kerberos.tokenSecret.itemKey": "dt",
        }
    )
    pod = SparkPod(pod={"spec": {}}, container={"env": [{"name": "T", "value": "1"}]})
    before = copy.deepcopy(pod)
    result = kerberos_conf_driver.step(conf, pod)
    assert result.pod.pod["spec"]["volumes"] == [
        {"name": "krb5-file", "configMap": {"name": "krb5"}},
        {"name": "hadoop-secret", "secret": {"secretName": "tokens"}},
    ]
    assert result.pod.container["volumeMounts"][1] == {
        "name": "hadoop-secret",
        "mountPath": "/mnt/secrets/hadoop-credentials",
    }
    assert result.pod.container["env"] == [
        {"name": "T", "value": "1"},
        {"name": "HADOOP_TOKEN_FILE_LOCATION", "value": "/mnt/secrets/hadoop-credentials/dt"},
    ]
    assert list(result.resources) == [] and dict(result.system_properties) == {}
    assert pod == before


def test_in_image_keytab_ships_nothing_but_a_token_secret_still_mounts():
    local_keytab = {
        "spark.kerberos.keytab": "local:///keys/k.keytab",
        "spark.kerberos.principal": "p",
    }
    alone = kerberos_conf_driver.step(make_conf(local_keytab), SparkPod.initial())
    assert alone.pod == SparkPod.initial() and list(alone.resources) == []
    with_tokens = kerberos_conf_driver.step(
        make_conf(
            {
                **local_keytab,
                "spark.kubernetes.kerberos.tokenSecret.name": "t",
                "spark.kubernetes.kerberos.tokenSecret.itemKey": "k",
            }
        ),
        SparkPod.initial(),
    )
    assert [v["name"] for v in with_tokens.pod.pod["spec"]["volumes"]] == ["hadoop-secret"]


def test_uploaded_keytab_wins_over_a_token_secret():
    conf = make_conf(
        {
            "spark.kerberos.keytab": "/keys/alice.keytab",
            "spark.kerberos.principal": "alice",
            "spark.kubernetes.kerberos.tokenSecret.name": "t",
            "spark.kubernetes.kerberos.tokenSecret.itemKey": "k",
        },
        local=kerberos_local(),
    )
    result = kerberos_conf_driver.step(conf, SparkPod.initial())
    assert [v["name"] for v in result.pod.pod["spec"]["volumes"]] == ["kerberos-keytab"]


def test_legacy_yarn_keytab_names_are_read():
    conf = make_conf(
        {"spark.yarn.keytab": "/keys/alice.keytab", "spark.yarn.principal": "alice"},
        local=kerberos_local(),
    )
    result = kerberos_conf_driver.step(conf, SparkPod.initial())
    assert dict(result.system_properties) == {
        "spark.kerberos.keytab": "/mnt/secrets/kerberos-keytab/alice.keytab"
    }


def test_kerberised_hadoop_without_keytab_or_token_secret_is_refused():
    conf = make_conf(local=hadoop_local(core_site=KERBEROS_SITE))
    with pytest.raises(SparkConfError, match="live Kerberos login") as err:
        kerberos_conf_driver.step(conf, SparkPod.initial())
    assert err.value.key == "hadoop.security.authentication"
    via_conf = make_conf({"spark.hadoop.hadoop.security.authentication": "KERBEROS"})
    with pytest.raises(SparkConfError):
        kerberos_conf_driver.step(via_conf, SparkPod.initial())
    simple = make_conf(local=hadoop_local())
    assert kerberos_conf_driver.step(simple, SparkPod.initial()).pod == SparkPod.initial()
    with_secret = make_conf(
        {
            "spark.kubernetes.kerberos.tokenSecret.name": "t",
            "spark.kubernetes.kerberos.tokenSecret.itemKey": "k",
        },
        local=hadoop_local(core_site=KERBEROS_SITE),
    )
    kerberos_conf_driver.step(with_secret, SparkPod.initial())


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        (
            {
                "spark.kubernetes.kerberos.krb5.path": "/etc/krb5.conf",
                "spark.kubernetes.kerberos.krb5.configMapName": "m",
            },
            "spark.kubernetes.kerberos.krb5.configMapName",
        ),
        ({"spark.kerberos.keytab": "/keys/alice.keytab"}, "spark.kerberos.keytab"),
        ({"spark.kerberos.principal": "alice"}, "spark.kerberos.principal"),
        (
            {"spark.kubernetes.kerberos.tokenSecret.name": "t"},
            "spark.kubernetes.kerberos.tokenSecret.name",
        ),
        (
            {"spark.kubernetes.kerberos.tokenSecret.itemKey": "k"},
            "spark.kubernetes.kerberos.tokenSecret.itemKey",
        ),
        (
            {"spark.kubernetes.kerberos.krb5.path": "/missing/krb5.conf"},
            "spark.kubernetes.kerberos.krb5.path",
        ),
        (
            {"spark.kerberos.keytab": "/missing.keytab", "spark.kerberos.principal": "a"},
            "spark.kerberos.keytab",
        ),
    ],
)
def test_kerberos_errors_name_the_key(extra, key):
    with pytest.raises(SparkConfError) as err:
        kerberos_conf_driver.step(make_conf(extra, local=kerberos_local()), SparkPod.initial())
    assert err.value.key == key


def test_malformed_core_site_is_reported():
    conf = make_conf(local=hadoop_local(core_site=b"<configuration>"))
    with pytest.raises(SparkConfError) as err:
        kerberos_conf_driver.step(conf, SparkPod.initial())
    assert err.value.key == "HADOOP_CONF_DIR"


def test_malformed_utf8_files_fail_on_4_3_and_are_replaced_before():
    bad = b"[libdefaults]\xff\n"
    local = LocalInputs(files={"/etc/krb5.conf": bad})
    conf_key = {"spark.kubernetes.kerberos.krb5.path": "/etc/krb5.conf"}
    with pytest.raises(SparkConfError, match="UTF-8"):
        kerberos_conf_driver.step(make_conf(conf_key, local=local), SparkPod.initial())
    old = kerberos_conf_driver.step(
        make_conf(conf_key, version="3.5.9", local=local), SparkPod.initial()
    )
    assert old.resources[0]["data"] == {"krb5.conf": "[libdefaults]\ufffd\n"}
    hadoop = hadoop_local(extra_files={f"{HADOOP_DIR}/core-site.xml": b"\xc3("})
    with pytest.raises(SparkConfError) as err:
        hadoop_conf_driver.step(make_conf(local=hadoop), SparkPod.initial())
    assert err.value.key == "HADOOP_CONF_DIR"
    old_hadoop = hadoop_conf_driver.step(
        make_conf(version="3.5.9", local=hadoop), SparkPod.initial()
    )
    assert old_hadoop.resources[0]["data"]["core-site.xml"] == "\ufffd("
