"""spark-submit argument semantics (the keys below are what real spark-submit wrote into
spark.properties in the parity captures)."""

from __future__ import annotations

import pytest

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.command_line.arguments import (
    load_java_properties,
    parse_command_line,
    parse_spark_submit,
)

MASTER = ["--master", "k8s://https://10.0.0.1:6443", "--deploy-mode", "cluster"]
JAR = "local:///opt/app.jar"


def parse(*argv: str, files: dict[str, str] | None = None, env: dict[str, str] | None = None):
    files = files or {}
    return parse_spark_submit(
        [*MASTER, *argv], environ=env or {}, read_text=files.get, submit_time_ms=1234, cwd="/work"
    )


def test_plain_jvm_submission_sets_what_spark_submit_sets() -> None:
    args = parse("--class", "a.B", JAR, "x", "--not-an-option")
    assert dict(args.spark_conf) == {
        "spark.master": "k8s://https://10.0.0.1:6443",
        "spark.submit.deployMode": "cluster",
        "spark.app.name": "a.B",  # no --name: the main class
        "spark.jars": JAR,  # the primary jar joins spark.jars
        "spark.submit.pyFiles": "",
        "spark.app.submitTime": "1234",
    }
    assert args.main_app_resource.kind == "java"
    assert args.main_class == "a.B"
    assert args.app_args == ("x", "--not-an-option")  # everything after the resource


def test_python_and_r_resources_use_spark_runners_and_file_names() -> None:
    py = parse("s3a://b/job.py", "1")
    assert py.main_app_resource.kind == "python"
    assert py.main_class == "org.apache.spark.deploy.PythonRunner"
    assert py.spark_conf["spark.app.name"] == "job.py"
    assert "spark.jars" not in py.spark_conf
    r = parse("local:///opt/x.R")
    assert (r.main_app_resource.kind, r.main_class) == ("r", "org.apache.spark.deploy.RRunner")


def test_flags_win_over_conf_and_conf_wins_over_properties_file() -> None:
    files = {"/p.conf": "spark.driver.memory 1g\nspark.executor.instances=2\nspark.a: file\n"}
    args = parse(
        "--properties-file", "/p.conf",
        "--conf", "spark.driver.memory=2g", "-c", "spark.a=conf",
        "--driver-memory", "3g", "--num-executors", "7", "--executor-cores", "2",
        "--executor-memory", "4g", "--driver-cores", "2", "--class", "M", JAR, files=files,
    )  # fmt: skip
    conf = args.spark_conf
    assert conf["spark.driver.memory"] == "3g"
    assert conf["spark.executor.instances"] == "7"
    assert conf["spark.a"] == "conf"
    assert (conf["spark.executor.cores"], conf["spark.executor.memory"]) == ("2", "4g")
    assert conf["spark.driver.cores"] == "2"


def test_spark_defaults_from_conf_dir_only_without_properties_file() -> None:
    files = {"/etc/spark/spark-defaults.conf": "spark.x  from-defaults  \n"}
    env = {"SPARK_CONF_DIR": "/etc/spark"}
    assert parse("--class", "M", JAR, files=files, env=env).spark_conf["spark.x"] == "from-defaults"
    files["/p"] = "spark.y=1\n"
    with_file = parse("--properties-file", "/p", "--class", "M", JAR, files=files, env=env)
    assert "spark.x" not in with_file.spark_conf
    both = parse(
        "--properties-file", "/p", "--load-spark-defaults", "--class", "M", JAR,
        files=files, env=env,
    )  # fmt: skip
    assert both.spark_conf["spark.x"] == "from-defaults" and both.spark_conf["spark.y"] == "1"


def test_non_spark_keys_are_dropped_and_reported() -> None:
    args = parse("--conf", "foo=bar", "--class", "M", JAR)
    assert "foo" not in args.spark_conf and args.ignored_keys == ("foo",)


def test_dependencies_resolved_like_spark_submit() -> None:
    args = parse(
        "--jars", " s3a://b/a.jar, ,lib/c.jar", "--files", "https://h/f.txt",
        "--archives", "env.tgz#env", "--py-files", "local:///x.zip", "--class", "M", JAR,
    )  # fmt: skip
    conf = args.spark_conf
    assert conf["spark.jars"] == f"s3a://b/a.jar,file:/work/lib/c.jar,{JAR}"
    assert conf["spark.files"] == "https://h/f.txt"
    assert conf["spark.archives"] == "file:/work/env.tgz#env"
    assert conf["spark.submit.pyFiles"] == "local:///x.zip"


def test_master_without_scheme_becomes_https_and_driver_host_is_dropped() -> None:
    args = parse_spark_submit(
        ["--master", "k8s://h:6443", "--deploy-mode", "cluster", "--conf",
         "spark.driver.host=x", "--class", "M", JAR],
        environ={},
    )  # fmt: skip
    assert args.spark_conf["spark.master"] == "k8s://https://h:6443"
    assert "spark.driver.host" not in args.spark_conf


def test_proxy_user_kill_status_and_our_flags() -> None:
    args = parse("--proxy-user", "bob", "--spark-version", "3.5.9", "--dry-run", "-v",
                 "--class", "M", JAR)  # fmt: skip
    assert (args.proxy_user, args.spark_version, args.dry_run, args.verbose) == (
        "bob", "3.5.9", True, True,
    )  # fmt: skip
    kill = parse("--kill", "ns:spark-pi-*")
    assert (kill.action, kill.submission_glob) == ("kill", "ns:spark-pi-*")
    assert parse("--status=ns:x").action == "status"


@pytest.mark.parametrize(
    ("argv", "key"),
    [
        (["--deploy-mode", "cluster", "--class", "M", JAR], "--master"),
        ([*MASTER[:2], "--class", "M", JAR], "--deploy-mode"),  # client is spark-submit's default
        ([*MASTER[:2], "--deploy-mode", "client", "--class", "M", JAR], "--deploy-mode"),
        ([*MASTER, "--conf", "novalue", "--class", "M", JAR], "--conf"),
        ([*MASTER, "--conf", "=v", "--class", "M", JAR], "--conf"),
        ([*MASTER, JAR], "--class"),
        ([*MASTER, "--class", "M"], "primary resource"),
        ([*MASTER, "--bogus", JAR], "argument"),
        ([*MASTER, "--packages", "g:a", "--class", "M", JAR], "spark.jars.packages"),
        ([*MASTER, "--exclude-packages", "g:a:1", "--class", "M", JAR], "spark.jars.excludes"),
        (
            [*MASTER, "--conf", "spark.jars.ivySettings=/nope.xml", "--class", "M", JAR],
            "spark.jars.ivySettings",
        ),
        (["--master", "yarn", "--deploy-mode", "cluster", "--class", "M", JAR], "spark.master"),
        ([*MASTER, "--properties-file", "/missing", "--class", "M", JAR], "--properties-file"),
        ([*MASTER, "--class"], "--class"),
    ],
)
def test_bad_arguments_raise_spark_conf_error(argv: list[str], key: str) -> None:
    with pytest.raises(SparkConfError) as raised:
        parse_spark_submit(argv, environ={}, read_text=lambda path: None)
    assert raised.value.key == key


def test_master_from_conf_and_inline_option_values() -> None:
    parsed = parse_command_line(["--name=a=b", "--verbose", "x.jar", "--name", "arg"])
    assert parsed.options == {"--name": "a=b"}
    assert parsed.primary_resource == "x.jar" and parsed.app_args == ("--name", "arg")
    args = parse_spark_submit(
        ["--conf", "spark.master=k8s://https://h:1", "--deploy-mode", "cluster", "--class",
         "M", JAR],
        environ={},
    )  # fmt: skip
    assert args.spark_conf["spark.master"] == "k8s://https://h:1"


def test_java_properties_loader() -> None:
    text = (
        "# comment\n! also comment\n  spaced.key   value with spaces  \n"
        "a\\ b=c\\:d\\=e\ncolon:1\ncont=one\\\n    two\nunicode=\\u00e9\nempty\n"
        "tab\\tkey=x\\ty\n"
    )
    assert load_java_properties(text) == {
        "spaced.key": "value with spaces  ",  # Properties keeps trailing blanks; Spark trims
        "a b": "c:d=e",
        "colon": "1",
        "cont": "onetwo",
        "unicode": "é",
        "empty": "",
        "tab\tkey": "x\ty",
    }


def test_packages_pass_through_to_the_driver_unresolved() -> None:
    argv = [
        *MASTER, "--packages", "g:a:1,g/b:2", "--exclude-packages", "g:x",
        "--repositories", "https://repo.example.com/m2", "--class", "M", JAR,
    ]  # fmt: skip
    conf = parse_spark_submit(argv, environ={}, read_text=lambda path: None).spark_conf
    assert conf["spark.jars.packages"] == "g:a:1,g/b:2"
    assert conf["spark.jars.excludes"] == "g:x"
    assert conf["spark.jars.repositories"] == "https://repo.example.com/m2"
    assert conf["spark.jars"] == JAR  # nothing resolved on this side


def test_package_flags_win_over_conf_keys() -> None:
    argv = [*MASTER, "--conf", "spark.jars.packages=g:old:1", "--packages", "g:new:1",
            "--conf", "spark.jars.ivySettings=/etc/ivy.xml", "--class", "M", JAR]  # fmt: skip
    conf = parse_spark_submit(argv, environ={}, read_text=lambda path: "<ivysettings/>").spark_conf
    assert conf["spark.jars.packages"] == "g:new:1"
    assert conf["spark.jars.ivySettings"] == "/etc/ivy.xml"


@pytest.mark.parametrize(
    ("flag", "key"),
    [
        ("--driver-memory", "spark.driver.memory"),
        ("--driver-java-options", "spark.driver.extraJavaOptions"),
        ("--driver-library-path", "spark.driver.extraLibraryPath"),
        ("--driver-class-path", "spark.driver.extraClassPath"),
        ("--driver-default-class-path", "spark.driver.defaultExtraClassPath"),
    ],
)
def test_the_launchers_driver_flags_lose_to_a_later_conf_and_win_over_an_earlier_one(
    flag: str, key: str
) -> None:
    later_conf = parse(flag, "1g", "--conf", f"{key}=5g", "--class", "M", JAR)
    assert later_conf.spark_conf[key] == "5g"
    later_flag = parse("-c", f"{key}=5g", flag, "1g", "--class", "M", JAR)
    assert later_flag.spark_conf[key] == "1g"
    again = parse(flag, "1g", "--conf", f"{key}=5g", flag, "2g", "--class", "M", JAR)
    assert again.spark_conf[key] == "2g"


def test_other_flags_win_over_a_later_conf() -> None:
    args = parse(
        "--executor-memory", "3g", "--conf", "spark.executor.memory=1g", "--class", "M", JAR
    )
    assert args.spark_conf["spark.executor.memory"] == "3g"


def test_a_bad_driver_memory_names_where_the_winning_value_came_from() -> None:
    with pytest.raises(SparkConfError) as flag_lost:
        parse("--driver-memory", "2g", "--conf", "spark.driver.memory=0", "--class", "M", JAR)
    assert (flag_lost.value.key, flag_lost.value.value) == ("spark.driver.memory", "0")
    with pytest.raises(SparkConfError) as flag_won:
        parse("--conf", "spark.driver.memory=2g", "--driver-memory", "0", "--class", "M", JAR)
    assert (flag_won.value.key, flag_won.value.value) == ("--driver-memory", "0")


@pytest.mark.parametrize(
    ("argv", "option", "version"),
    [
        (["--load-spark-defaults"], "--load-spark-defaults", "3.5.9"),
        (["--driver-default-class-path", "/x"], "--driver-default-class-path", "3.5.9"),
        (["--extra-properties-file", "/x"], "--extra-properties-file", "4.1.4"),
    ],
)
def test_an_option_newer_than_the_line_is_unrecognized(
    argv: list[str], option: str, version: str
) -> None:
    with pytest.raises(SparkConfError) as refused:
        parse("--spark-version", version, *argv, "--class", "M", JAR)
    assert refused.value.key == option
    assert f"Unrecognized option: {option}" in str(refused.value)


def test_before_any_file_is_read_another_managers_option_then_the_lines_are_refused() -> None:
    """The order of the checks before reading (even --help waits for them): another cluster
    manager's option first, then an option the line does not know yet."""

    def no_reading(path: str) -> str | None:
        raise AssertionError(f"read {path} before the command line was checked")

    line_option = [*MASTER, "--spark-version", "3.5.9", "--load-spark-defaults", "--help"]
    with pytest.raises(SparkConfError) as refused:
        parse_spark_submit([*line_option, "--queue", "q"], environ={}, read_text=no_reading)
    assert (refused.value.key, refused.value.value) == ("--queue", "q")
    with pytest.raises(SparkConfError, match="Unrecognized option: --load-spark-defaults"):
        parse_spark_submit(line_option, environ={}, read_text=no_reading)


def test_the_line_of_an_image_named_in_the_properties_file_decides_too() -> None:
    files = {"/p": "spark.kubernetes.container.image apache/spark:3.5.7\n"}
    with pytest.raises(SparkConfError, match="Unrecognized option: --load-spark-defaults"):
        parse("--properties-file", "/p", "--load-spark-defaults", "--class", "M", JAR, files=files)


def test_extra_properties_files_win_over_the_properties_file_in_order_never_over_conf() -> None:
    files = {
        "/p": "spark.a p\nspark.b p\nspark.c p\nspark.d p\n",
        "/e1": "spark.b e1\nspark.c e1\nspark.d e1\n",
        "/e2": "spark.c e2\nspark.d e2\n",
    }
    args = parse(
        "--properties-file", "/p", "--extra-properties-file", "/e1",
        "--extra-properties-file", "/e2", "--conf", "spark.d=conf", "--class", "M", JAR,
        files=files, env={"SPARK_CONF_DIR": "/etc/spark"},
    )  # fmt: skip
    conf = args.spark_conf
    assert [conf[k] for k in ("spark.a", "spark.b", "spark.c", "spark.d")] == [
        "p", "e1", "e2", "conf",
    ]  # fmt: skip
    with pytest.raises(SparkConfError) as missing:
        parse("--extra-properties-file", "/nope", "--class", "M", JAR)
    assert (missing.value.key, missing.value.value) == ("--extra-properties-file", "/nope")


def test_remote_flag_with_a_master_is_refused_naming_the_flag() -> None:
    with pytest.raises(SparkConfError) as refused:
        parse("--remote", "sc://localhost", "--class", "M", JAR)
    assert (refused.value.key, refused.value.value) == ("--remote", "sc://localhost")
    assert "Remote cannot be specified with master" in str(refused.value)


def test_spark_submit_opts_system_properties_are_the_lowest_conf_layer() -> None:
    env = {
        "SPARK_SUBMIT_OPTS": "-Xmx1g -Dspark.a=opts '-Dspark.b=x y' -Dspark.c=opts -Dother=1"
        " -Dspark.driver.host=h"
    }
    files = {"/p": "spark.c file\n"}
    args = parse(
        "--properties-file", "/p", "--conf", "spark.a=conf", "--class", "M", JAR,
        files=files, env=env,
    )  # fmt: skip
    conf = args.spark_conf
    assert (conf["spark.a"], conf["spark.b"], conf["spark.c"]) == ("conf", "x y", "file")
    assert "other" not in conf and "spark.driver.host" not in conf
