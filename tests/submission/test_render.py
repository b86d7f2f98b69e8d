import pytest
import yaml

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.conf import LocalInputs, MainAppResource
from airflow_provider_sparkk8s.submission.render import prepare, render, to_yaml
from tests.support.driver_conf import APP_ID, IDS

JAR = MainAppResource("java", "local:///opt/spark/examples/jars/spark-examples.jar")
BASE = {
    "spark.kubernetes.container.image": "apache/spark:4.3.0",
    "spark.master": "k8s://https://10.0.0.1:6443",
}


def prep(extra=None, **kwargs):
    kwargs.setdefault("main_app_resource", JAR)
    kwargs.setdefault("main_class", "org.apache.spark.examples.SparkPi")
    kwargs.setdefault("local", LocalInputs(spark_user="alice"))
    return prepare({**BASE, **(extra or {})}, ids=IDS, **kwargs)


def test_plain_jvm_submission_matches_reference_shape():
    rendered = render(
        prep({"spark.app.name": "pi", "spark.driver.host": "dropped"}, app_args=("100",))
    )
    prefix = "pi-a1b2c39ad0f8a400"
    assert rendered.app_id == APP_ID
    assert rendered.driver_pod_name == f"{prefix}-driver"
    assert rendered.submission_id == f"default:{prefix}-driver"
    pod = rendered.driver_pod
    assert pod["metadata"]["namespace"] == "default"
    container = pod["spec"]["containers"][-1]
    assert container["args"] == [
        "driver",
        "--properties-file",
        "/opt/spark/conf/spark.properties",
        "--class",
        "org.apache.spark.examples.SparkPi",
        "local:///opt/spark/examples/jars/spark-examples.jar",
        "100",
    ]
    assert [e["name"] for e in container["env"]] == [
        "SPARK_USER",
        "SPARK_APPLICATION_ID",
        "SPARK_DRIVER_BIND_ADDRESS",
        "SPARK_LOCAL_DIRS",
        "SPARK_CONF_DIR",
    ]
    assert [m["name"] for m in container["volumeMounts"]] == [
        "spark-local-dir-1",
        "spark-conf-volume-driver",
    ]
    assert [(o["kind"], o["metadata"]["name"]) for o in rendered.resources] == [
        ("Service", f"{prefix}-driver-svc"),
        ("NetworkPolicy", f"{prefix}-policy"),
        ("ConfigMap", "spark-drv-d4e5f69ad0f8a400-conf-map"),
    ]
    assert rendered.objects[0] is pod and rendered.pre_resources == ()
    props = rendered.resources[-1]["data"]["spark.properties"].splitlines()[2:]
    assert props == [
        f"spark.app.id={APP_ID}",
        "spark.app.name=pi",
        "spark.driver.blockManager.port=7079",
        f"spark.driver.host={prefix}-driver-svc.default.svc",
        "spark.driver.port=7078",
        "spark.kubernetes.container.image=apache/spark\\:4.3.0",
        f"spark.kubernetes.driver.pod.name={prefix}-driver",
        "spark.kubernetes.memoryOverheadFactor=0.1",
        "spark.kubernetes.resource.type=java",
        "spark.kubernetes.submitInDriver=true",
        "spark.master=k8s\\://https\\://10.0.0.1\\:6443",
        "spark.submit.deployMode=cluster",
    ]


@pytest.mark.parametrize(
    ("version", "kinds", "label"),
    [
        ("3.5.9", ["Service", "ConfigMap"], "3.5.9"),
        ("4.0.5", ["Service", "ConfigMap"], "4.0.5"),
        ("4.1.4", ["Service", "ConfigMap"], "4.1.4"),
        ("4.2.1", ["Service", "NetworkPolicy", "ConfigMap"], "4.2.1"),
        ("4.3.0", ["Service", "NetworkPolicy", "ConfigMap"], "4.3.0"),
    ],
)
def test_lines(version, kinds, label):
    rendered = render(prep(spark_version=version))
    assert [o["kind"] for o in rendered.resources] == kinds
    assert rendered.driver_pod["metadata"]["labels"]["spark-version"] == label


def test_redacted_tokens_and_no_secret_in_output():
    rendered = render(
        prep(
            {
                "spark.kubernetes.authenticate.submission.oauthToken": "TOPSECRET",
                "spark.kubernetes.authenticate.driver.oauthToken": "DRIVERSECRET",
            }
        )
    )
    text = to_yaml(rendered.objects)
    assert "TOPSECRET" not in text
    assert "DRIVERSECRET" not in text.replace(
        rendered.resources[0]["data"]["oauth-token"], ""
    )  # only base64 in the Secret
    props = rendered.resources[-1]["data"]["spark.properties"]
    assert "spark.kubernetes.authenticate.submission.oauthToken=<present_but_redacted>" in props


def test_prepare_defaults():
    conf = prep()
    assert conf.spark_conf["spark.app.name"] == "org.apache.spark.examples.SparkPi"
    assert conf.spark_conf["spark.submit.deployMode"] == "cluster"
    py = prep(
        main_app_resource=MainAppResource("python", "local:///app/jobs/etl.py"), main_class=None
    )
    assert py.main_class == "org.apache.spark.deploy.PythonRunner"
    assert py.spark_conf["spark.app.name"] == "etl.py"
    r = prep(main_app_resource=MainAppResource("r", "local:///a.R"), main_class=None)
    assert r.main_class == "org.apache.spark.deploy.RRunner"
    assert prep({"spark.app.name": "given"}).spark_conf["spark.app.name"] == "given"
    assert "spark.driver.host" not in prep({"spark.driver.host": "h"}).spark_conf


@pytest.mark.parametrize(
    ("kwargs", "key"),
    [
        ({"spark_version": "3.4.1"}, "spark_version"),
        ({"spark_version": "4.4.0"}, "spark_version"),
        ({"spark_version": "4.3"}, "spark_version"),
        ({"main_class": None}, "main_class"),
        ({"main_app_resource": MainAppResource("python", None)}, "main application resource"),
    ],
)
def test_prepare_refusals(kwargs, key):
    with pytest.raises(SparkConfError) as err:
        prep(**kwargs)
    assert err.value.key == key


def test_prepare_refuses_client_mode_and_bad_namespace():
    with pytest.raises(SparkConfError):
        prep({"spark.submit.deployMode": "client"})
    with pytest.raises(SparkConfError):
        prep({"spark.kubernetes.namespace": "Bad_NS"})


def test_namespace_everywhere():
    rendered = render(prep({"spark.kubernetes.namespace": "jobs"}))
    assert rendered.driver_pod["metadata"]["namespace"] == "jobs"
    assert rendered.resources[-1]["data"]["spark.kubernetes.namespace"] == "jobs"
    assert rendered.submission_id.startswith("jobs:")


def test_to_yaml_round_trips():
    rendered = render(prep())
    docs = list(yaml.safe_load_all(to_yaml(rendered.objects)))
    assert docs == rendered.objects
    assert "spark.properties: |" in to_yaml(rendered.objects)


def test_pod_body_names_namespace_only_after_a_template_did():
    plain = render(prep({"spark.kubernetes.namespace": "jobs"}))
    assert "namespace" not in plain.driver_pod_body["metadata"]
    assert plain.driver_pod["metadata"]["namespace"] == "jobs"
    template = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"namespace": "other"},
        "spec": {"containers": [{"name": "c"}]},
    }
    templated = render(prep({"spark.kubernetes.namespace": "jobs"}, driver_pod_template=template))
    assert templated.driver_pod_body["metadata"]["namespace"] == "jobs"


def test_executor_pod_name_prefix_is_checked_up_front():
    assert prep({"spark.kubernetes.executor.podNamePrefix": "etl-run"}).spark_conf
    for bad in ["ETL", "a" * 238, "-x"]:
        with pytest.raises(SparkConfError) as err:
            prep({"spark.kubernetes.executor.podNamePrefix": bad})
        assert err.value.key == "spark.kubernetes.executor.podNamePrefix"
