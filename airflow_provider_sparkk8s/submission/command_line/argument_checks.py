"""spark-submit's own checks of its arguments, made before the Kubernetes client runs.

`SparkSubmitArguments` refuses, on every Spark line we support (3.5, 4.0-4.3):
- driver and executor memory that is not a positive byte string (`--driver-memory`, else
  `spark.driver.memory`, else `$SPARK_DRIVER_MEMORY`; the same for the executor);
- driver cores, executor cores, total executor cores and the number of executors that are
  not positive whole numbers (`spark.cores.max` is checked even off standalone; the number
  of executors only while `spark.dynamicAllocation.enabled` is not `true`);
- `--proxy-user` together with a Kerberos principal; a Spark Connect remote (`--remote`,
  else `spark.remote`, else `$SPARK_REMOTE`) together with a master (4.x lets
  `spark.local.connect` through);
- `--kill` together with `--status`.
The launcher (`SparkSubmitCommandBuilder`) refuses before that, in cluster mode too, driver
java options that set the heap (4.x: an option starting with `-Xmx`, and options that do not
split; 3.5: any `Xmx` in the text).
`SparkSubmit.prepareSubmitEnvironment` then refuses cluster mode for the shells, the SQL
CLI, the Thrift server and the Connect server.

spark-submit's messages do not show the value ("Executor memory must be a positive
number"); ours name where the value came from (flag, conf key or environment variable),
the value, and what is accepted. Pure: every input is passed in.
"""

from __future__ import annotations

from collections.abc import Mapping

from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.records import record
from airflow_provider_sparkk8s.submission.command_line.submit_opts import parse_option_string
from airflow_provider_sparkk8s.submission.conf_values import (
    iec_sizes,
    parse_int,
    parse_size,
    version_tuple,
)

# Primary resources and main classes that only make sense with a local driver.
SHELLS = ("spark-shell", "pyspark-shell", "sparkr-shell", "connect-shell")
LOCAL_ONLY_MAIN_CLASSES = {
    "org.apache.spark.sql.hive.thriftserver.SparkSQLCLIDriver": "the Spark SQL shell",
    "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2": "the Spark Thrift server",
    "org.apache.spark.sql.connect.service.SparkConnectServer": "the Spark Connect server",
}
DYNAMIC_ALLOCATION_KEY = "spark.dynamicAllocation.enabled"


@record
class Setting:
    """One value spark-submit reads from a flag, else a conf key, else the environment."""

    what: str  # spark-submit's words in its message
    flag: str
    key: str
    env: str | None = None
    size: bool = False  # a byte string (else a whole number)


DRIVER_MEMORY = Setting("Driver memory", "--driver-memory", "spark.driver.memory",
                        "SPARK_DRIVER_MEMORY", size=True)  # fmt: skip
EXECUTOR_MEMORY = Setting("Executor memory", "--executor-memory", "spark.executor.memory",
                          "SPARK_EXECUTOR_MEMORY", size=True)  # fmt: skip
DRIVER_CORES = Setting("Driver cores", "--driver-cores", "spark.driver.cores")
EXECUTOR_CORES = Setting("Executor cores", "--executor-cores", "spark.executor.cores",
                         "SPARK_EXECUTOR_CORES")  # fmt: skip
TOTAL_EXECUTOR_CORES = Setting("Total executor cores", "--total-executor-cores", "spark.cores.max")
NUM_EXECUTORS = Setting("Number of executors", "--num-executors", "spark.executor.instances")
POSITIVE_SETTINGS = (
    DRIVER_MEMORY, EXECUTOR_MEMORY, DRIVER_CORES, EXECUTOR_CORES, TOTAL_EXECUTOR_CORES,
)  # fmt: skip
# (flag, key) of the driver's java options ("": spark.driver.defaultJavaOptions has none).
DRIVER_JAVA_OPTIONS = (
    ("--driver-java-options", "spark.driver.extraJavaOptions"),
    ("", "spark.driver.defaultJavaOptions"),
)
PRINCIPAL_SOURCES = ("--principal", "spark.kerberos.principal", "spark.yarn.principal")


def resolve(
    setting: Setting,
    options: Mapping[str, str],
    conf: Mapping[str, str],
    environ: Mapping[str, str],
) -> tuple[str, str] | None:
    """(where the value came from, the value), in spark-submit's order; None when unset."""
    if setting.flag in options:
        return setting.flag, options[setting.flag]
    if setting.key in conf:
        return setting.key, conf[setting.key]
    if setting.env is not None and setting.env in environ:
        return setting.env, environ[setting.env]
    return None


def _is_positive(setting: Setting, origin: str, value: str, iec: bool) -> bool:
    try:
        # Memory: JavaUtils.byteStringAsBytes (a bare number is bytes; IEC units on 4.2+).
        # Counts: String.toInt, which does not trim.
        number = (
            parse_size(origin, value, "b", iec=iec)
            if setting.size
            else parse_int(origin, value, trim=False)
        )
    except SparkConfError:
        return False
    return number > 0


def check_positive(
    setting: Setting,
    options: Mapping[str, str],
    conf: Mapping[str, str],
    environ: Mapping[str, str],
    *,
    iec: bool = False,
) -> None:
    found = resolve(setting, options, conf, environ)
    if found is None:
        return
    origin, value = found
    if not _is_positive(setting, origin, value, iec):
        units = "b, k, m, g, t, p; ki, mi, gi, ti, pi" if iec else "b, k, m, g, t, p"
        accepted = (
            f"a positive whole number with an optional unit ({units}), such as 512m or 2g"
            if setting.size
            else "a positive whole number, such as 1 or 4"
        )
        why = f"{setting.what} must be a positive number"
        if setting.size and not iec and _is_positive(setting, origin, value, True):
            why += "; IEC units such as 2gib need Spark 4.2 or later"
        raise SparkConfError(origin, value, accepted, why)


def _first(
    sources: tuple[str, ...], options: Mapping[str, str], conf: Mapping[str, str]
) -> tuple[str, str] | None:
    for source in sources:
        value = options.get(source) if source.startswith("--") else conf.get(source)
        if value is not None:
            return source, value
    return None


def check_actions(options: Mapping[str, str]) -> None:
    """`--kill` and `--status` are two actions; spark-submit takes one."""
    if "--kill" in options and "--status" in options:
        raise SparkConfError(
            "--status", options["--status"], "either --kill or --status, not both",
            f"--kill {options['--kill']!r} is given too",
        )  # fmt: skip


def check_arguments(
    options: Mapping[str, str],
    conf: Mapping[str, str],
    environ: Mapping[str, str],
    *,
    spark_version: str,
) -> None:
    """SparkSubmitArguments.validateArguments, once the conf files are merged.

    `options` are the flags as written, `conf` the `--conf` pairs merged with the properties
    file (only `spark.` keys), `environ` the submitter's environment, `spark_version` the
    release whose spark-submit we stand for (sizes take IEC units from 4.2 on).
    """
    check_actions(options)
    if "--kill" not in options and "--status" not in options:
        check_submit_arguments(options, conf, environ, iec=iec_sizes(spark_version))


def check_submit_arguments(
    options: Mapping[str, str],
    conf: Mapping[str, str],
    environ: Mapping[str, str],
    *,
    iec: bool = False,
) -> None:
    """validateSubmitArguments: the checks of a submission (not of --kill or --status)."""
    has_master = bool(options.get("--master") or conf.get("spark.master") or environ.get("MASTER"))
    remote_source = _first(("--remote", "spark.remote"), options, conf)
    if remote_source is None and "SPARK_REMOTE" in environ:
        remote_source = "SPARK_REMOTE", environ["SPARK_REMOTE"]
    remote = None if remote_source is None else remote_source[1]
    deploy_mode_given = (
        "--deploy-mode" in options
        or "spark.submit.deployMode" in conf
        or ("DEPLOY_MODE" in environ)
    )
    if (
        remote is not None
        and "spark.local.connect" not in conf
        and (has_master or deploy_mode_given)
    ):
        origin = "SPARK_REMOTE" if remote_source is None else remote_source[0]
        raise SparkConfError(
            origin, remote, "no Spark Connect remote when a master or deploy mode is given",
            "spark-submit: Remote cannot be specified with master and/or deploy mode",
        )  # fmt: skip
    for setting in POSITIVE_SETTINGS:
        check_positive(setting, options, conf, environ, iec=iec)
    if conf.get(DYNAMIC_ALLOCATION_KEY, "").lower() != "true":
        check_positive(NUM_EXECUTORS, options, conf, environ)
    principal = _first(PRINCIPAL_SOURCES, options, conf)
    if "--proxy-user" in options and principal is not None:
        raise SparkConfError(
            "--proxy-user", options["--proxy-user"], "either --proxy-user or a principal",
            f"{principal[0]}={principal[1]!r} is given too; spark-submit: Only one of "
            "--proxy-user or --principal can be provided",
        )  # fmt: skip


def check_driver_java_options(
    options: Mapping[str, str], conf: Mapping[str, str], *, spark_version: str
) -> None:
    """The launcher's checkJavaOptions, in cluster mode too: the driver's java options set
    no heap. 4.x splits them as JVM options (refusing what does not split) and looks for an
    option starting with -Xmx; 3.5 refuses any "Xmx" in the text and splits nothing."""
    splits = version_tuple(spark_version) >= (4, 0, 0)
    for flag, key in DRIVER_JAVA_OPTIONS:
        origin = flag if flag in options else key
        value = options.get(flag) if flag in options else conf.get(key)
        if not value:
            continue
        if splits:
            heap = any(o.startswith("-Xmx") for o in parse_option_string(value, origin))
        else:
            heap = "Xmx" in value
        if heap:
            raise SparkConfError(
                origin, value, "java options without -Xmx",
                "spark-submit: Not allowed to specify max heap(Xmx) memory settings "
                "through java options; use --driver-memory or spark.driver.memory",
            )  # fmt: skip


def check_cluster_mode_application(primary_resource: str, main_class: str | None) -> None:
    """prepareSubmitEnvironment: shells and servers cannot run as a cluster-mode driver."""
    if primary_resource in SHELLS:
        raise SparkConfError(
            "primary resource", primary_resource, "an application's jar, .py or .R file",
            "spark-submit: Cluster deploy mode is not applicable to Spark shells",
        )  # fmt: skip
    what = LOCAL_ONLY_MAIN_CLASSES.get(main_class or "")
    if what is not None:
        raise SparkConfError(
            "--class", main_class, "an application's main class",
            f"{what} runs in client mode only; spark-submit refuses it in cluster mode",
        )  # fmt: skip
