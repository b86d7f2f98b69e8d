import copy

import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.features import env_secrets, mount_secrets
from airflow_provider_sparkk8s.submission.spec import SparkPod
from tests.support.driver_conf import make_conf

TEMPLATE_POD = SparkPod(
    pod={"metadata": {}, "spec": {"volumes": [{"name": "tpl", "emptyDir": {}}]}},
    container={
        "name": "main",
        "env": [{"name": "FROM_TEMPLATE", "value": "1"}],
        "volumeMounts": [{"name": "tpl", "mountPath": "/tpl"}],
    },
)


def test_each_secret_becomes_a_volume_and_a_mount_in_spark_s_map_order():
    conf = make_conf(
        {
            "spark.kubernetes.driver.secrets.db-creds": "/etc/db",
            "spark.kubernetes.driver.secrets.tls": "/etc/tls",
            "spark.kubernetes.executor.secrets.other": "/ignored",
        }
    )
    result = mount_secrets.step(conf, SparkPod.initial())
    order = list(conf.prefixed(mount_secrets.PREFIX))
    assert sorted(order) == ["db-creds", "tls"]
    paths = {"db-creds": "/etc/db", "tls": "/etc/tls"}
    assert result.pod.pod["spec"]["volumes"] == [
        {"name": f"{name}-volume", "secret": {"secretName": name}} for name in order
    ]
    assert result.pod.container["volumeMounts"] == [
        {"name": f"{name}-volume", "mountPath": paths[name]} for name in order
    ]
    assert dict(result.system_properties) == {}
    assert list(result.resources) == [] and list(result.pre_resources) == []


def test_secrets_are_appended_after_template_entries_and_inputs_stay_untouched():
    before = copy.deepcopy(TEMPLATE_POD)
    conf = make_conf({"spark.kubernetes.driver.secrets.s": "/s"})
    result = mount_secrets.step(conf, TEMPLATE_POD)
    assert [v["name"] for v in result.pod.pod["spec"]["volumes"]] == ["tpl", "s-volume"]
    assert [m["name"] for m in result.pod.container["volumeMounts"]] == ["tpl", "s-volume"]
    assert before == TEMPLATE_POD


def test_a_secret_mounted_where_something_else_is_mounted_is_refused():
    conf = make_conf({"spark.kubernetes.driver.secrets.s": "/tpl"})
    with pytest.raises(SparkConfError) as err:
        mount_secrets.step(conf, TEMPLATE_POD)
    assert err.value.key == "spark.kubernetes.driver.secrets.s" and err.value.value == "/tpl"


def test_no_secrets_leaves_the_pod_as_it_was():
    result = mount_secrets.step(make_conf(), SparkPod.initial())
    assert result.pod == SparkPod.initial()


@pytest.mark.parametrize(
    ("name", "path"),
    [("Upper", "/x"), ("has.dot", "/x"), ("a" * 57, "/x"), ("ok", "")],
)
def test_secret_names_that_cannot_make_a_volume_and_empty_paths_are_refused(name, path):
    conf = make_conf({f"spark.kubernetes.driver.secrets.{name}": path})
    with pytest.raises(SparkConfError) as err:
        mount_secrets.step(conf, SparkPod.initial())
    assert err.value.key == f"spark.kubernetes.driver.secrets.{name}"


def test_secret_key_refs_become_env_vars_after_template_env():
    conf = make_conf(
        {
            "spark.kubernetes.driver.secretKeyRef.DB_PASSWORD": "db-creds:password",
            "spark.kubernetes.driver.secretKeyRef.API_TOKEN": "api:token.v1",
        }
    )
    before = copy.deepcopy(TEMPLATE_POD)
    result = env_secrets.step(conf, TEMPLATE_POD)
    expected = {
        "DB_PASSWORD": {"secretKeyRef": {"key": "password", "name": "db-creds"}},
        "API_TOKEN": {"secretKeyRef": {"key": "token.v1", "name": "api"}},
    }
    order = list(conf.prefixed(env_secrets.PREFIX))
    assert result.pod.container["env"] == [{"name": "FROM_TEMPLATE", "value": "1"}] + [
        {"name": name, "valueFrom": expected[name]} for name in order
    ]
    assert result.pod.pod == TEMPLATE_POD.pod
    assert before == TEMPLATE_POD


@pytest.mark.parametrize(
    "ref",
    ["no-colon", "a:b:c", "name:", "UPPER:key", ":key", "name:bad key"],
)
def test_secret_key_refs_not_of_the_form_name_colon_key_are_refused(ref):
    conf = make_conf({"spark.kubernetes.driver.secretKeyRef.ENV": ref})
    with pytest.raises(SparkConfError) as err:
        env_secrets.step(conf, SparkPod.initial())
    assert err.value.key == "spark.kubernetes.driver.secretKeyRef.ENV"
    assert err.value.value == ref


def test_step_metadata_names_spark_classes():
    assert (
        mount_secrets.SPARK_CLASS == "org.apache.spark.deploy.k8s.features.MountSecretsFeatureStep"
    )
    assert env_secrets.SPARK_CLASS == "org.apache.spark.deploy.k8s.features.EnvSecretsFeatureStep"


MANY = [f"sec{i}" for i in range(6)] + ["alpha-x", "alpha-y", "alpha-z"]


@pytest.mark.parametrize(
    ("version", "volumes", "mounts"),
    [
        # What spark-submit 4.3.0 / 3.5.9 sent: volumes come from a HashSet of fabric8
        # Volumes, mounts from the Scala map of the conf family.
        (
            "4.3.0",
            ["sec4", "sec3", "sec2", "sec0", "sec5", "sec1", "alpha-z", "alpha-y", "alpha-x"],
            ["sec3", "alpha-y", "sec4", "alpha-z", "sec5", "sec0", "sec2", "alpha-x", "sec1"],
        ),
        (
            "3.5.9",
            ["alpha-x", "alpha-z", "sec5", "sec3", "sec4", "sec1", "alpha-y", "sec0", "sec2"],
            ["sec3", "alpha-y", "sec4", "alpha-z", "sec5", "sec0", "sec2", "alpha-x", "sec1"],
        ),
    ],
)
def test_more_than_four_secrets_follow_spark_s_hash_orders(version, volumes, mounts):
    conf = make_conf(
        {f"spark.kubernetes.driver.secrets.{name}": f"/m/{name}" for name in MANY}, version=version
    )
    result = mount_secrets.step(conf, SparkPod.initial())
    assert [v["name"] for v in result.pod.pod["spec"]["volumes"]] == [
        f"{n}-volume" for n in volumes
    ]
    assert [m["name"] for m in result.pod.container["volumeMounts"]] == [
        f"{n}-volume" for n in mounts
    ]
