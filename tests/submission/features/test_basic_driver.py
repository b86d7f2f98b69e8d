import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.conf import LocalInputs
from airflow_provider_sparkk8s.submission.features import basic_driver
from airflow_provider_sparkk8s.submission.spec import SparkPod
from tests.support.driver_conf import APP_ID, IMAGE, PREFIX, make_conf


def run(conf, pod=None):
    return basic_driver.step(conf, pod or SparkPod.initial())


def container(conf, pod=None):
    return run(conf, pod).pod.container


@pytest.mark.parametrize(
    ("extra", "kind", "version", "memory"),
    [
        ({}, "java", "4.3.0", "1408Mi"),  # 1024 + max(102, 384)
        ({}, "python", "4.3.0", "1433Mi"),  # 1024 + max(409, 384)
        ({"spark.driver.memory": "8g"}, "java", "4.3.0", "9011Mi"),  # 8192 + 819
        (
            {"spark.driver.memory": "2g", "spark.driver.memoryOverhead": "100"},
            "java",
            "4.3.0",
            "2148Mi",
        ),
        ({"spark.driver.memory": "1500k"}, "java", "4.3.0", "385Mi"),  # 1 MiB + 384
        ({"spark.driver.memory": "4096"}, "java", "4.3.0", "4505Mi"),  # bare number = MiB
        ({"spark.driver.minMemoryOverhead": "500m"}, "java", "4.3.0", "1524Mi"),
        ({"spark.driver.minMemoryOverhead": "500m"}, "java", "3.5.9", "1408Mi"),  # 3.5: const 384
        (
            {"spark.kubernetes.memoryOverheadFactor": "0.2", "spark.driver.memory": "4g"},
            "python",
            "4.3.0",
            "4915Mi",
        ),
        (
            {"spark.driver.memoryOverheadFactor": "0.5", "spark.driver.memory": "4g"},
            "java",
            "4.3.0",
            "6144Mi",
        ),
        (
            {
                "spark.driver.memoryOverheadFactor": "0.05",
                "spark.kubernetes.memoryOverheadFactor": "0.9",
            },
            "r",
            "4.0.5",
            "1408Mi",
        ),
    ],
)
def test_memory_formula(extra, kind, version, memory):
    primary = None if kind == "java" else "local:///app/main.py"
    c = container(make_conf(extra, kind=kind, version=version, primary=primary))
    assert c["resources"]["requests"]["memory"] == memory
    assert c["resources"]["limits"]["memory"] == memory


def test_overhead_factor_system_property_is_java_formatted():
    props = run(make_conf()).system_properties
    assert props["spark.kubernetes.memoryOverheadFactor"] == "0.1"
    py = make_conf(kind="python", primary="local:///a.py")
    assert run(py).system_properties["spark.kubernetes.memoryOverheadFactor"] == "0.4"
    one = make_conf({"spark.kubernetes.memoryOverheadFactor": "1"})
    assert run(one).system_properties["spark.kubernetes.memoryOverheadFactor"] == "1.0"
    assert props["spark.app.id"] == APP_ID
    assert props["spark.kubernetes.submitInDriver"] == "true"
    assert props["spark.kubernetes.driver.pod.name"] == f"{PREFIX}-driver"


def test_plain_container_and_pod_for_4_3():
    result = run(make_conf())
    c, pod = result.pod.container, result.pod.pod
    assert c["name"] == "spark-kubernetes-driver"
    assert c["image"] == IMAGE and c["imagePullPolicy"] == "IfNotPresent"
    assert c["ports"] == [
        {"name": "driver-rpc-port", "containerPort": 7078, "protocol": "TCP"},
        {"name": "blockmanager", "containerPort": 7079, "protocol": "TCP"},
        {"name": "spark-ui", "containerPort": 4040, "protocol": "TCP"},
        {"name": "spark-connect", "containerPort": 15002, "protocol": "TCP"},
    ]
    assert [e["name"] for e in c["env"]] == [
        "SPARK_USER",
        "SPARK_APPLICATION_ID",
        "SPARK_DRIVER_BIND_ADDRESS",
    ]
    assert c["env"][0]["value"] == "alice"
    assert c["env"][2]["valueFrom"] == {
        "fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}
    }
    assert c["resources"] == {
        "requests": {"cpu": "1", "memory": "1408Mi"},
        "limits": {"memory": "1408Mi"},
    }
    assert c["securityContext"] == {"allowPrivilegeEscalation": False}
    assert pod["metadata"]["name"] == f"{PREFIX}-driver"
    assert list(pod["metadata"]["labels"].items()) == [
        ("spark-version", "4.3.0"),
        ("spark-app-selector", APP_ID),
        ("spark-app-name", "pi"),
        ("spark-role", "driver"),
    ]
    assert "annotations" not in pod["metadata"]
    assert pod["spec"] == {"restartPolicy": "Never"}


@pytest.mark.parametrize(
    ("version", "connect", "escalation"),
    [
        ("3.5.9", False, False),
        ("4.0.5", False, False),
        ("4.1.4", True, False),
        ("4.2.1", True, False),
        ("4.3.0", True, True),
    ],
)
def test_version_differences(version, connect, escalation):
    c = container(
        make_conf({"spark.kubernetes.container.image": "spark:{{SPARK_VERSION}}"}, version=version)
    )
    assert ("spark-connect" in [p["name"] for p in c["ports"]]) is connect
    assert ("securityContext" in c) is escalation
    expected_image = f"spark:{version}" if version >= "4.1" else "spark:{{SPARK_VERSION}}"
    assert c["image"] == expected_image


def test_app_id_in_labels_since_4_0_and_annotations_always():
    extra = {
        "spark.kubernetes.driver.label.run": "{{APP_ID}}{{EXECUTOR_ID}}",
        "spark.kubernetes.driver.annotation.note": "app={{APP_ID}}",
    }
    new = run(make_conf(extra, version="4.0.5")).pod.pod["metadata"]
    assert new["labels"]["run"] == APP_ID
    annotation_only = {"spark.kubernetes.driver.annotation.note": "app={{APP_ID}}"}
    old = run(make_conf(annotation_only, version="3.5.9")).pod.pod["metadata"]
    assert old["annotations"] == new["annotations"] == {"note": f"app={APP_ID}"}


def test_3_5_keeps_braces_in_labels_which_kubernetes_refuses():
    # 3.5 does not substitute label values; the API server would refuse `{{`, so we refuse first.
    with pytest.raises(SparkConfError) as err:
        run(make_conf({"spark.kubernetes.driver.label.run": "{{APP_ID}}"}, version="3.5.9"))
    assert err.value.key == "spark.kubernetes.driver.label.run"
    assert err.value.value == "{{APP_ID}}"


def test_user_labels_come_first_and_reserved_are_refused():
    labels = run(make_conf({"spark.kubernetes.driver.label.team": "data"})).pod.pod["metadata"][
        "labels"
    ]
    assert next(iter(labels)) == "team"
    with pytest.raises(SparkConfError) as err:
        run(make_conf({"spark.kubernetes.driver.label.spark-role": "x"}))
    assert err.value.key == "spark.kubernetes.driver.label.spark-role"


def test_invalid_label_and_annotation_keys():
    with pytest.raises(SparkConfError):
        run(make_conf({"spark.kubernetes.driver.label.bad key": "x"}))
    with pytest.raises(SparkConfError):
        run(make_conf({"spark.kubernetes.driver.label.k": "bad value"}))
    with pytest.raises(SparkConfError):
        run(make_conf({"spark.kubernetes.driver.annotation.-bad": "x"}))


def test_env_order_ports_and_resources_from_conf():
    extra = {
        "spark.kubernetes.driverEnv.A": "1",
        "spark.kubernetes.driverEnv.B": "2",
        "spark.driver.port": "7000",
        "spark.blockManager.port": "7100",
        "spark.ui.port": "4041",
        "spark.connect.grpc.binding.port": "15003",
        "spark.driver.cores": "2",
        "spark.kubernetes.driver.limit.cores": "1500m",
        "spark.driver.resource.gpu.amount": "1",
        "spark.driver.resource.gpu.vendor": "nvidia.com",
    }
    c = container(make_conf(extra))
    assert [e["name"] for e in c["env"]] == [
        "SPARK_USER",
        "SPARK_APPLICATION_ID",
        "A",
        "B",
        "SPARK_DRIVER_BIND_ADDRESS",
    ]
    assert [p["containerPort"] for p in c["ports"]] == [7000, 7100, 4041, 15003]
    assert c["resources"]["requests"] == {"cpu": "2", "memory": "1408Mi"}
    assert c["resources"]["limits"] == {"cpu": "1500m", "memory": "1408Mi", "nvidia.com/gpu": "1"}
    driver_bm = container(make_conf({**extra, "spark.driver.blockManager.port": "7200"}))
    assert driver_bm["ports"][1]["containerPort"] == 7200


def test_request_cores_verbatim_and_validated():
    c = container(make_conf({"spark.kubernetes.driver.request.cores": "0.5"}))
    assert c["resources"]["requests"]["cpu"] == "0.5"
    for key, value in [
        ("spark.kubernetes.driver.request.cores", "half"),
        ("spark.kubernetes.driver.limit.cores", "-1"),
        ("spark.driver.cores", "1.5"),
        ("spark.driver.cores", "0"),
        ("spark.driver.memory", "1.5g"),
        ("spark.driver.memory", "-1g"),
        ("spark.driver.port", " 7078"),
        ("spark.driver.port", "70000"),
    ]:
        with pytest.raises(SparkConfError) as err:
            run(make_conf({key: value}))
        assert err.value.key == key


def test_custom_resource_needs_vendor_and_amount():
    with pytest.raises(SparkConfError) as err:
        run(make_conf({"spark.driver.resource.gpu.amount": "1"}))
    assert err.value.key == "spark.driver.resource.gpu.vendor"
    with pytest.raises(SparkConfError) as err:
        run(make_conf({"spark.driver.resource.gpu.vendor": "nvidia.com"}))
    assert err.value.key == "spark.driver.resource.gpu.amount"


def test_image_pull_selectors_scheduler():
    extra = {
        "spark.kubernetes.driver.container.image": "driver:1",
        "spark.kubernetes.container.image.pullPolicy": "Always",
        "spark.kubernetes.container.image.pullSecrets": " a, ,b ",
        "spark.kubernetes.node.selector.zone": "a",
        "spark.kubernetes.node.selector.disk": "ssd",
        "spark.kubernetes.driver.node.selector.zone": "b",
        "spark.kubernetes.scheduler.name": "common",
        "spark.kubernetes.driver.scheduler.name": "drv",
    }
    result = run(make_conf(extra))
    assert result.pod.container["image"] == "driver:1"
    assert result.pod.container["imagePullPolicy"] == "Always"
    spec = result.pod.pod["spec"]
    assert spec["imagePullSecrets"] == [{"name": "a"}, {"name": "b"}]
    assert spec["nodeSelector"] == {"zone": "b", "disk": "ssd"}
    assert spec["schedulerName"] == "drv"
    with pytest.raises(SparkConfError):
        run(make_conf({"spark.kubernetes.container.image.pullPolicy": "always"}))


def test_missing_image():
    conf = make_conf()
    conf = type(conf)(**{**conf.__dict__, "spark_conf": {"spark.app.name": "pi"}})
    with pytest.raises(SparkConfError) as err:
        run(conf)
    assert "Must specify the driver container image" in str(err.value)


@pytest.mark.parametrize("version", ["4.3.0", "4.2.1", "3.5.9"])
def test_spark_user_with_a_proxy_user_and_no_spark_user_set_is_the_proxy_user(version):
    """The OS user (alice here) never shows: spark-submit runs inside the proxy user's doAs."""
    conf = make_conf(proxy_user="bob", version=version, local=LocalInputs(spark_user="alice"))
    assert container(conf)["env"][0] == {"name": "SPARK_USER", "value": "bob"}


def test_a_submitters_spark_user_beats_the_proxy_user_only_before_4_3():
    local = LocalInputs(spark_user="carol", environment={"SPARK_USER": "carol"})
    for version, expected in (("4.3.0", "bob"), ("4.2.1", "carol"), ("3.5.9", "carol")):
        conf = make_conf(proxy_user="bob", version=version, local=local)
        assert container(conf)["env"][0]["value"] == expected, version
    assert container(make_conf(local=local))["env"][0]["value"] == "carol"  # no proxy user


def test_privilege_escalation_conf_and_fallback():
    c = container(make_conf({"spark.kubernetes.securityContext.allowPrivilegeEscalation": "TRUE"}))
    assert c["securityContext"]["allowPrivilegeEscalation"] is True
    c = container(
        make_conf(
            {
                "spark.kubernetes.securityContext.allowPrivilegeEscalation": "true",
                "spark.kubernetes.driver.securityContext.allowPrivilegeEscalation": "false",
            }
        )
    )
    assert c["securityContext"]["allowPrivilegeEscalation"] is False


def test_template_values_are_merged_not_lost():
    template = SparkPod(
        pod={
            "metadata": {"name": "t", "labels": {"from": "template"}},
            "spec": {
                "restartPolicy": "Always",
                "imagePullSecrets": [{"name": "t"}],
                "nodeSelector": {"zone": "t"},
            },
        },
        container={
            "name": "main",
            "image": "old",
            "env": [{"name": "T", "value": "1"}],
            "resources": {"requests": {"ephemeral-storage": "1Gi", "cpu": "9"}},
            "securityContext": {"runAsUser": 1000, "allowPrivilegeEscalation": True},
        },
    )
    result = run(make_conf({"spark.kubernetes.container.image.pullSecrets": "s"}), template)
    c, pod = result.pod.container, result.pod.pod
    assert c["name"] == "main" and c["image"] == IMAGE
    assert c["env"][0] == {"name": "T", "value": "1"}
    assert c["resources"]["requests"] == {
        "ephemeral-storage": "1Gi",
        "cpu": "1",
        "memory": "1408Mi",
    }
    assert c["securityContext"] == {"runAsUser": 1000, "allowPrivilegeEscalation": False}
    assert pod["metadata"]["name"] == f"{PREFIX}-driver"
    assert pod["metadata"]["labels"]["from"] == "template"
    assert pod["spec"]["restartPolicy"] == "Never"
    assert pod["spec"]["imagePullSecrets"] == [{"name": "t"}, {"name": "s"}]
    assert template.container["image"] == "old"  # inputs untouched


@pytest.mark.parametrize(
    "key", ["spark.jars", "spark.files", "spark.archives", "spark.submit.pyFiles"]
)
@pytest.mark.parametrize(
    "entry", ["/tmp/app.jar", "file:///tmp/app.jar", "file:/tmp/a.zip#env", "app.jar"]
)
def test_local_dependencies_without_upload_path_are_refused(key, entry):
    with pytest.raises(SparkConfError) as err:
        run(make_conf({key: f"local:///ok.jar,{entry}"}))
    assert err.value.key == key and err.value.value == entry
    assert "Please specify spark.kubernetes.file.upload.path property." in str(err.value)


def test_local_dependencies_point_at_their_uploads():
    extra = {
        "spark.jars": "local:///ok.jar,file:/work/app.jar",
        "spark.kubernetes.file.upload.path": "s3a://bucket/up",
    }
    jars = run(make_conf(extra)).system_properties["spark.jars"]
    uploaded, remote = jars.split(",")
    assert uploaded.startswith("s3a://bucket/up/spark-upload-") and uploaded.endswith("/app.jar")
    assert remote == "local:///ok.jar"


def test_remote_dependencies_pass_unchanged():
    extra = {
        "spark.jars": "local:///a.jar,s3a://b/c.jar,spark-internal",
        "spark.archives": "https://x/env.tgz#env",
        "spark.submit.pyFiles": "",
    }
    props = run(make_conf(extra)).system_properties
    assert "spark.jars" not in props  # left exactly as it was (in the conf)


ENV_BASE = {
    "spark.app.name": "env-app",
    "spark.app.submitTime": "1764352742000",
    "spark.jars": "local:///opt/app/app.jar",
    "spark.kubernetes.container.image": "apache/spark:4.0.0",
    "spark.kubernetes.submission.waitAppCompletion": "false",
    "spark.master": "k8s://http://127.0.0.1:40000",
    "spark.submit.deployMode": "cluster",
    "spark.submit.pyFiles": "",
}


@pytest.mark.parametrize(
    ("version", "entries", "expected"),
    [  # what real spark-submit sent (tests/parity/golden/driver-env*.json)
        (
            "4.3.0",
            {"ALPHA": "1", "BETA": "two words", "GAMMA": "x=y:z"},
            ["BETA", "ALPHA", "GAMMA"],
        ),
        (
            "3.5.9",
            {"ALPHA": "1", "BETA": "two words", "GAMMA": "x=y:z"},
            ["GAMMA", "BETA", "ALPHA"],
        ),
        (
            "4.3.0",
            {n: str(i) for i, n in enumerate(["ONE", "TWO", "THREE", "FOUR", "FIVE", "SIX"], 1)},
            ["FIVE", "TWO", "ONE", "THREE", "SIX", "FOUR"],
        ),
    ],
)
def test_driver_env_in_spark_map_order(version, entries, expected):
    extra = {**ENV_BASE, **{f"spark.kubernetes.driverEnv.{k}": v for k, v in entries.items()}}
    names = [e["name"] for e in container(make_conf(extra, version=version))["env"]]
    assert names[2:-1] == expected
