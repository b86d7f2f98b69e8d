import copy
import dataclasses
import random

import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.conf import LocalInputs
from airflow_provider_sparkk8s.submission.features import local_dirs
from airflow_provider_sparkk8s.submission.spec import SparkPod
from tests.support.driver_conf import IDS, make_conf

DEFAULT = f"/var/data/spark-{IDS.local_dir_uuids[0]}"


def run(extra=None, env=None, pod=None):
    conf = make_conf(extra, local=LocalInputs(environment=env or {}))
    return local_dirs.step(conf, pod or SparkPod.initial())


def test_default_dir_is_an_empty_dir_under_var_data_with_the_submission_uuid():
    result = run()
    assert result.pod.pod["spec"]["volumes"] == [{"name": "spark-local-dir-1", "emptyDir": {}}]
    assert result.pod.container == {
        "volumeMounts": [{"name": "spark-local-dir-1", "mountPath": DEFAULT}],
        "env": [{"name": "SPARK_LOCAL_DIRS", "value": DEFAULT}],
    }
    assert list(result.resources) == [] and dict(result.system_properties) == {}


def test_tmpfs_puts_the_dirs_in_memory():
    result = run({"spark.kubernetes.local.dirs.tmpfs": " true "})
    assert result.pod.pod["spec"]["volumes"] == [
        {"name": "spark-local-dir-1", "emptyDir": {"medium": "Memory"}}
    ]
    with pytest.raises(SparkConfError) as err:
        run({"spark.kubernetes.local.dirs.tmpfs": "yes"})
    assert err.value.key == "spark.kubernetes.local.dirs.tmpfs"


def test_configured_dirs_are_shuffled_with_the_submission_seed():
    """spark-submit shuffles the configured dirs on every line (real captures: three runs,
    three orders) and numbers the volumes in the shuffled order."""
    result = run({"spark.local.dir": "/b,/a,/c"})
    expected = ["/b", "/a", "/c"]
    random.Random(IDS.shuffle_seed).shuffle(expected)
    mounts = result.pod.container["volumeMounts"]
    assert [(m["name"], m["mountPath"]) for m in mounts] == [
        (f"spark-local-dir-{index}", path) for index, path in enumerate(expected, start=1)
    ]
    assert [v["name"] for v in result.pod.pod["spec"]["volumes"]] == [
        "spark-local-dir-1",
        "spark-local-dir-2",
        "spark-local-dir-3",
    ]
    assert result.pod.container["env"] == [
        {"name": "SPARK_LOCAL_DIRS", "value": ",".join(expected)}
    ]
    assert run({"spark.local.dir": "/b,/a,/c"}) == result  # one submission, one order


def test_other_submissions_draw_other_orders():
    orders = set()
    for seed in range(20):
        ids = dataclasses.replace(IDS, shuffle_seed=seed)
        conf = dataclasses.replace(make_conf({"spark.local.dir": "/b,/a,/c"}), ids=ids)
        env = local_dirs.step(conf, SparkPod.initial()).pod.container["env"]
        orders.add(env[0]["value"])
    assert len(orders) > 1
    assert all(sorted(order.split(",")) == ["/a", "/b", "/c"] for order in orders)


def test_submitter_environment_wins_over_the_conf_even_when_empty_of_dirs():
    result = run({"spark.local.dir": "/conf"}, env={"SPARK_LOCAL_DIRS": "/env1,/env2"})
    assert [m["mountPath"] for m in result.pod.container["volumeMounts"]] == ["/env1", "/env2"]
    # "," splits into nothing (Java drops trailing empties): no volumes, an empty variable.
    nothing = run({"spark.local.dir": "/conf"}, env={"SPARK_LOCAL_DIRS": ","})
    assert "volumes" not in nothing.pod.pod["spec"]
    assert nothing.pod.container == {"env": [{"name": "SPARK_LOCAL_DIRS", "value": ""}]}


@pytest.mark.parametrize(
    ("extra", "env", "key"),
    [
        ({}, {"SPARK_LOCAL_DIRS": ""}, "SPARK_LOCAL_DIRS"),
        ({"spark.local.dir": "/a,,/b"}, {}, "spark.local.dir"),
        ({"spark.local.dir": "/a,/a"}, {}, "spark.local.dir"),
    ],
)
def test_empty_or_repeated_dirs_are_refused(extra, env, key):
    with pytest.raises(SparkConfError) as err:
        run(extra, env)
    assert err.value.key == key


def test_dir_already_mounted_by_another_volume_is_refused():
    pod = SparkPod(
        pod={"spec": {}}, container={"volumeMounts": [{"name": "data", "mountPath": "/data"}]}
    )
    with pytest.raises(SparkConfError):
        run({"spark.local.dir": "/data"}, pod=pod)


def test_existing_local_dir_mounts_are_used_shuffled_with_the_submission_seed():
    mounts = [
        {"name": "spark-local-dir-a", "mountPath": "/a"},
        {"name": "other", "mountPath": "/o"},
        {"name": "spark-local-dir-b", "mountPath": "/b"},
        {"name": "spark-local-dir-c", "mountPath": "/c"},
    ]
    pod = SparkPod(
        pod={"spec": {"volumes": [{"name": "x", "emptyDir": {}}]}},
        container={"volumeMounts": mounts},
    )
    before = copy.deepcopy(pod)
    result = run({"spark.local.dir": "/ignored"}, pod=pod)
    expected = ["/a", "/b", "/c"]
    random.Random(IDS.shuffle_seed).shuffle(expected)
    assert result.pod.container["env"] == [
        {"name": "SPARK_LOCAL_DIRS", "value": ",".join(expected)}
    ]
    assert result.pod.container["volumeMounts"] == mounts
    assert result.pod.pod == pod.pod
    assert pod == before
