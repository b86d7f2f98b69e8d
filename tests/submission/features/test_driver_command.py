import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.conf import PYTHON_RUNNER, R_RUNNER, LocalInputs
from airflow_provider_sparkk8s.submission.features import driver_command
from airflow_provider_sparkk8s.submission.spec import SparkPod
from tests.support.driver_conf import make_conf

HEAD = ["driver", "--properties-file", "/opt/spark/conf/spark.properties", "--class"]


def run(conf, pod=None):
    return driver_command.step(conf, pod or SparkPod.initial())


@pytest.mark.parametrize(
    ("primary", "resource"),
    [
        ("local:///opt/app.jar", "local:///opt/app.jar"),
        ("s3a://b/app.jar", "s3a://b/app.jar"),
        ("/tmp/app.jar", "spark-internal"),
        ("file:/tmp/app.jar", "spark-internal"),
        (None, "spark-internal"),
    ],
)
def test_java_args(primary, resource):
    result = run(make_conf(primary=primary, app_args=("10", "x y")))
    assert result.pod.container["args"] == [
        *HEAD,
        "org.apache.spark.examples.SparkPi",
        resource,
        "10",
        "x y",
    ]
    assert "env" not in result.pod.container
    assert result.system_properties == {"spark.kubernetes.resource.type": "java"}


def test_proxy_user_and_template_args_stay_in_front():
    pod = SparkPod(pod={"metadata": {}, "spec": {}}, container={"args": ["--tpl"]})
    args = run(make_conf(proxy_user="bob"), pod).pod.container["args"]
    assert args[:4] == ["--tpl", "driver", "--proxy-user", "bob"]


def test_python_args_and_env_precedence():
    conf = make_conf(
        kind="python",
        primary="local:///app/main.py",
        main_class=PYTHON_RUNNER,
        local=LocalInputs(environment={"PYSPARK_PYTHON": "envpy"}),
    )
    result = run(conf)
    assert result.pod.container["args"] == [
        *HEAD,
        "org.apache.spark.deploy.PythonRunner",
        "local:///app/main.py",
    ]
    assert result.pod.container["env"] == [
        {"name": "PYSPARK_PYTHON", "value": "envpy"},
        {"name": "PYSPARK_DRIVER_PYTHON", "value": "envpy"},
    ]
    assert result.system_properties == {"spark.kubernetes.resource.type": "python"}
    conf = make_conf(
        {"spark.pyspark.python": "python3.11"},
        kind="python",
        primary="local:///a.py",
        local=LocalInputs(environment={"PYSPARK_DRIVER_PYTHON": "ipython", "PYSPARK_PYTHON": "p"}),
    )
    assert run(conf).pod.container["env"] == [
        {"name": "PYSPARK_PYTHON", "value": "python3.11"},
        {"name": "PYSPARK_DRIVER_PYTHON", "value": "python3.11"},
    ]
    conf = make_conf({"spark.pyspark.driver.python": "d"}, kind="python", primary="local:///a.py")
    assert run(conf).pod.container["env"] == [{"name": "PYSPARK_DRIVER_PYTHON", "value": "d"}]


def test_local_python_file_without_upload_path_is_refused():
    with pytest.raises(SparkConfError) as err:
        run(make_conf(kind="python", primary="/home/me/app.py"))
    assert err.value.key == "primary resource" and err.value.value == "/home/me/app.py"
    assert "Please specify spark.kubernetes.file.upload.path property." in str(err.value)


def test_local_python_file_is_replaced_by_its_upload():
    conf = make_conf(
        {"spark.kubernetes.file.upload.path": "file:///shared"},
        kind="python",
        primary="file:/home/me/app.py",
    )
    resource = run(conf).pod.container["args"][-1]
    assert resource.startswith("file:///shared/spark-upload-") and resource.endswith("/app.py")


def test_r_keeps_resource():
    result = run(make_conf(kind="r", primary="/home/me/app.R", main_class=R_RUNNER))
    assert result.pod.container["args"][-1] == "/home/me/app.R"
    assert result.system_properties == {"spark.kubernetes.resource.type": "r"}


@pytest.mark.parametrize("value", ["2", "3.11", ""])
def test_python_version_other_than_3_is_refused_on_3_5(value):
    conf = make_conf(
        {"spark.kubernetes.pyspark.pythonVersion": value},
        version="3.5.9", kind="python", primary="local:///a.py",
    )  # fmt: skip
    with pytest.raises(SparkConfError) as refused:
        run(conf)
    assert (refused.value.key, refused.value.value) == (
        "spark.kubernetes.pyspark.pythonVersion",
        value,
    )
    assert "Python 2 was dropped from Spark 3.1" in str(refused.value)


def test_python_version_3_on_3_5_warns_and_4_x_or_a_jvm_app_never_reads_it(caplog):
    key = {"spark.kubernetes.pyspark.pythonVersion": "3"}
    with caplog.at_level("WARNING"):
        run(make_conf(key, version="3.5.9", kind="python", primary="local:///a.py"))
    assert "spark.kubernetes.pyspark.pythonVersion was deprecated in Spark 3.1" in caplog.text
    two = {"spark.kubernetes.pyspark.pythonVersion": "2"}
    run(make_conf(two, version="4.1.4", kind="python", primary="local:///a.py"))
    run(make_conf(two, version="3.5.9"))  # a JVM application: the key is not read
