import os

import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.services.submit import local_inputs


def test_gather_reads_files_dirs_env_and_user(tmp_path):
    template = tmp_path / "driver.yaml"
    template.write_text("apiVersion: v1\nkind: Pod\n")
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    (conf_dir / "log4j2.properties").write_text("rootLogger.level=info\n")
    (conf_dir / "sub").mkdir()
    env = {"SPARK_CONF_DIR": str(conf_dir), "SPARK_USER": "alice", "AWS_SECRET_ACCESS_KEY": "x"}
    conf = {
        "spark.kubernetes.driver.podTemplateFile": f"file://{template}",
        "spark.kerberos.keytab": "local:///etc/app.keytab",
    }
    inputs = local_inputs.gather(conf, env)
    assert inputs.files[f"file://{template}"] == b"apiVersion: v1\nkind: Pod\n"
    assert "local:///etc/app.keytab" not in inputs.files
    assert inputs.directories[str(conf_dir)] == ("log4j2.properties",)
    assert inputs.files[f"{conf_dir}/log4j2.properties"] == b"rootLogger.level=info\n"
    assert inputs.spark_user == "alice"
    assert "AWS_SECRET_ACCESS_KEY" not in inputs.environment


def test_missing_file_names_key_and_path(tmp_path):
    missing = str(tmp_path / "nope.yaml")
    with pytest.raises(SparkConfError) as err:
        local_inputs.gather({"spark.kubernetes.executor.podTemplateFile": missing}, {})
    assert err.value.key == "spark.kubernetes.executor.podTemplateFile"
    assert err.value.value == missing


def test_remote_template_is_refused():
    with pytest.raises(SparkConfError):
        local_inputs.gather({"spark.kubernetes.driver.podTemplateFile": "s3a://b/t.yaml"}, {})


def test_missing_conf_dir_ships_nothing(tmp_path):
    inputs = local_inputs.gather({}, {"HADOOP_CONF_DIR": str(tmp_path / "none")})
    assert inputs.directories == {}


def test_user_falls_back_to_os_user():
    assert local_inputs.gather({}, {}).spark_user  # the OS user name, never empty
    assert local_inputs.submitting_user({"SPARK_USER": "bob"}) == "bob"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads unreadable files")
def test_unreadable_file(tmp_path):
    path = tmp_path / "key.pem"
    path.write_text("k")
    path.chmod(0)
    with pytest.raises(SparkConfError) as err:
        local_inputs.gather({"spark.kubernetes.authenticate.driver.clientKeyFile": str(path)}, {})
    assert err.value.key == "spark.kubernetes.authenticate.driver.clientKeyFile"


def test_hadoop_user_name_is_the_user_without_spark_user():
    assert local_inputs.submitting_user({"HADOOP_USER_NAME": "hdfs"}) == "hdfs"
    both = {"SPARK_USER": "spark", "HADOOP_USER_NAME": "hdfs"}
    assert local_inputs.submitting_user(both) == "spark"
    opts = {"SPARK_SUBMIT_OPTS": "-Xmx1g -DHADOOP_USER_NAME=from-opts"}
    assert local_inputs.submitting_user(opts) == "from-opts"
    assert local_inputs.submitting_user({**opts, "HADOOP_USER_NAME": "env"}) == "env"
    assert local_inputs.gather({}, opts).spark_user == "from-opts"
    assert "SPARK_SUBMIT_OPTS" not in local_inputs.gather({}, opts).environment


def test_an_empty_spark_user_is_the_user():
    assert local_inputs.submitting_user({"SPARK_USER": "", "HADOOP_USER_NAME": "hdfs"}) == ""
