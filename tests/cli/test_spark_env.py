import io

import pytest

from airflow_provider_sparkk8s.cli import spark_env
from airflow_provider_sparkk8s.errors import SparkConfError


def write_env_sh(directory, text):
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "spark-env.sh").write_text(text)


def test_spark_env_sh_assignments_are_exported_as_with_set_a(tmp_path):
    conf = tmp_path / "conf"
    write_env_sh(
        conf,
        'echo hello from spark-env\nSPARK_USER=envsh\nexport PYSPARK_PYTHON="$BASE/py"\n'
        "unset DROPPED\nMULTI='a\nb'\n",
    )
    err = io.StringIO()
    env = spark_env.wrapper_environment(
        {"SPARK_CONF_DIR": str(conf), "SPARK_USER": "shell", "BASE": "/opt", "DROPPED": "x"}, err
    )
    assert env["SPARK_USER"] == "envsh"
    assert env["PYSPARK_PYTHON"] == "/opt/py"
    assert env["MULTI"] == "a\nb"
    assert "DROPPED" not in env
    assert env["SPARK_ENV_LOADED"] == "1" and env["SPARK_CONF_DIR"] == str(conf)
    assert "SHLVL" not in env and "_" not in env
    assert "hello from spark-env" in err.getvalue()


def test_spark_home_conf_is_the_default_conf_dir_and_is_exported(tmp_path):
    write_env_sh(tmp_path / "conf", "FROM_HOME=1\n")
    env = spark_env.wrapper_environment({"SPARK_HOME": str(tmp_path)}, io.StringIO())
    assert env["FROM_HOME"] == "1"
    assert env["SPARK_CONF_DIR"] == f"{tmp_path}/conf"


def test_nothing_is_sourced_once_loaded_or_without_a_conf_dir(tmp_path):
    write_env_sh(tmp_path, "X=1\n")
    loaded = {"SPARK_CONF_DIR": str(tmp_path), "SPARK_ENV_LOADED": "1"}
    assert spark_env.wrapper_environment(loaded, io.StringIO()) == loaded
    assert spark_env.wrapper_environment({}, io.StringIO()) == {"SPARK_ENV_LOADED": "1"}
    missing = {"SPARK_CONF_DIR": str(tmp_path / "none")}
    assert spark_env.wrapper_environment(missing, io.StringIO())["SPARK_CONF_DIR"] == str(
        tmp_path / "none"
    )


def test_spark_testing_drops_the_hadoop_and_yarn_conf_dirs(tmp_path):
    env = {"SPARK_TESTING": "1", "HADOOP_CONF_DIR": "/h", "YARN_CONF_DIR": "/y", "A": "1"}
    assert spark_env.wrapper_environment(env, io.StringIO()) == {
        "SPARK_TESTING": "1", "A": "1", "SPARK_ENV_LOADED": "1",
    }  # fmt: skip


@pytest.mark.parametrize("text", ["exit 3\n", "exit 0\n"])
def test_a_script_that_exits_stops_the_submission(tmp_path, text):
    write_env_sh(tmp_path, text)
    with pytest.raises(SparkConfError) as refused:
        spark_env.wrapper_environment({"SPARK_CONF_DIR": str(tmp_path)}, io.StringIO())
    assert refused.value.key == "spark-env.sh"
    assert refused.value.value == str(tmp_path / "spark-env.sh")
