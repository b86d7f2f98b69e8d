import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission import builder
from airflow_provider_sparkk8s.submission.spec import SparkPod, StepResult
from tests.support.driver_conf import make_conf

NP = "org.apache.spark.deploy.k8s.features.NetworkPolicyFeatureStep"
SELF = "tests.submission.test_builder"


def add_marker_step(conf, pod):
    container = {
        **pod.container,
        "env": [*pod.container.get("env", []), {"name": "MARK", "value": "1"}],
    }
    return StepResult(
        pod=SparkPod(pod.pod, container),
        system_properties={"spark.user.step": "ran", "spark.app.id": "overridden"},
        pre_resources=(
            {"apiVersion": "scheduling.x/v1", "kind": "PodGroup", "metadata": {"name": "pg"}},
        ),
        resources=({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "user-cm"}},),
    )


def not_a_step(conf, pod):
    return {"pod": pod}


NOT_CALLABLE = 3


def names(conf):
    return [step.name.rsplit(".", 1)[-1] for step in builder.active_steps(conf)]


ALL_43 = [
    "BasicDriverFeatureStep",
    "DriverKubernetesCredentialsFeatureStep",
    "DriverServiceFeatureStep",
    "NetworkPolicyFeatureStep",
    "MountSecretsFeatureStep",
    "EnvSecretsFeatureStep",
    "MountVolumesFeatureStep",
    "DriverCommandFeatureStep",
    "HadoopConfDriverFeatureStep",
    "KerberosConfDriverFeatureStep",
    "PodTemplateConfigMapStep",
    "LocalDirsFeatureStep",
    # Ours, after Spark's: no-ops unless switched on (features/driver_disruption_budget.py,
    # features/executor_decommission.py).
    "driver_disruption_budget:step",
    "executor_decommission:step",
    # The secure preset's (application/policy/secure_preset.py).
    "auth_secret:step",
    "executor_network_policy:step",
    "pod_security:step",
]


@pytest.mark.parametrize("version", ["4.2.1", "4.3.0"])
def test_order_with_network_policy(version):
    assert names(make_conf(version=version)) == ALL_43


@pytest.mark.parametrize("version", ["3.5.9", "4.0.5", "4.1.4"])
def test_no_network_policy_before_4_2(version):
    assert names(make_conf(version=version)) == [
        n for n in ALL_43 if n != "NetworkPolicyFeatureStep"
    ]


def test_our_steps_change_nothing_unless_switched_on():
    plain = builder.build_driver_spec(make_conf())
    without_ours = builder.build_driver_spec(make_conf(), builder.builtin_steps(make_conf())[:-5])
    assert plain == without_ours


def test_exclusion_since_4_1_only():
    extra = {
        builder.EXCLUDED_STEPS_KEY: f"{NP}, org.apache.spark.deploy.k8s.features.LocalDirsFeatureStep"
    }
    assert "NetworkPolicyFeatureStep" not in names(make_conf(extra))
    assert "LocalDirsFeatureStep" not in names(make_conf(extra))
    extra = {
        builder.EXCLUDED_STEPS_KEY: "org.apache.spark.deploy.k8s.features.LocalDirsFeatureStep"
    }
    assert "LocalDirsFeatureStep" in names(make_conf(extra, version="4.0.5"))


def test_user_steps_run_last_and_fold():
    conf = make_conf({builder.USER_STEPS_KEY: f"{SELF}:add_marker_step"})
    spec = builder.build_driver_spec(conf)
    assert [e["name"] for e in spec.pod.container["env"]][-2:] == ["SPARK_LOCAL_DIRS", "MARK"]
    assert spec.system_properties["spark.user.step"] == "ran"
    assert spec.system_properties["spark.app.id"] == "overridden"  # later steps overwrite
    assert spec.system_properties["spark.app.name"] == "pi"  # every conf entry starts the map
    assert [r["kind"] for r in spec.pre_resources] == ["PodGroup"]
    assert [r["kind"] for r in spec.resources] == ["Service", "NetworkPolicy", "ConfigMap"]
    dotted = make_conf({builder.USER_STEPS_KEY: f"{SELF}.add_marker_step"})
    assert names(dotted)[-1] == "add_marker_step"
    excluded = make_conf(
        {
            builder.USER_STEPS_KEY: f"{SELF}.add_marker_step",
            builder.EXCLUDED_STEPS_KEY: f"{SELF}.add_marker_step",
        }
    )
    assert names(excluded) == ALL_43


@pytest.mark.parametrize(
    "path",
    [
        "org.apache.spark.deploy.k8s.features.KubernetesDriverBuilder",
        f"{SELF}:missing",
        "no_such_module_xyz:step",
        f"{SELF}:NOT_CALLABLE",
        "justaname",
    ],
)
def test_bad_user_steps(path):
    with pytest.raises(SparkConfError) as err:
        builder.active_steps(make_conf({builder.USER_STEPS_KEY: path}))
    assert err.value.key == builder.USER_STEPS_KEY
    assert err.value.value == path


def test_user_step_returning_wrong_type():
    with pytest.raises(SparkConfError):
        builder.build_driver_spec(make_conf({builder.USER_STEPS_KEY: f"{SELF}:not_a_step"}))


def test_assembly_puts_spark_container_last_and_conf_volume_last():
    template = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"labels": {"t": "1"}},
        "spec": {
            "containers": [{"name": "sidecar", "image": "s"}, {"name": "spark", "image": "x"}],
            "volumes": [{"name": "tv", "emptyDir": {}}],
        },
    }
    conf = make_conf(
        {"spark.kubernetes.driver.podTemplateContainerName": "spark"}, driver_pod_template=template
    )
    assembled = builder.assemble(conf, builder.build_driver_spec(conf))
    containers = assembled.pod["spec"]["containers"]
    assert [c["name"] for c in containers] == ["sidecar", "spark"]
    assert containers[-1]["env"][-1] == {"name": "SPARK_CONF_DIR", "value": "/opt/spark/conf"}
    assert containers[-1]["volumeMounts"][-1] == {
        "name": "spark-conf-volume-driver",
        "mountPath": "/opt/spark/conf",
    }
    volumes = assembled.pod["spec"]["volumes"]
    assert volumes[0]["name"] == "tv" and volumes[-1]["name"] == "spark-conf-volume-driver"
    assert assembled.pod["apiVersion"] == "v1" and assembled.pod["kind"] == "Pod"
    assert assembled.conf_config_map["metadata"]["name"] == "spark-drv-d4e5f69ad0f8a400-conf-map"
