"""IMPURE: read from the submitting machine what the pure steps need, once, as `LocalInputs`.

This is the only module of the pipeline that touches the file system or the environment.
Spark reads these on the submitter too: pod-template files, the krb5 file, the keytab, the
credential files shipped to the driver, and the HADOOP_CONF_DIR / SPARK_CONF_DIR
directories named by the environment.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping

from airflow_provider_sparkk8s.environment import hidden
from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.submission.command_line import submit_opts
from airflow_provider_sparkk8s.submission.conf import LocalInputs
from airflow_provider_sparkk8s.submission.uris import uri_scheme

# Conf keys naming a file Spark reads on the submitting machine.
FILE_KEYS = (
    "spark.kubernetes.driver.podTemplateFile",
    "spark.kubernetes.executor.podTemplateFile",
    "spark.kubernetes.kerberos.krb5.path",
    "spark.kerberos.keytab",
    "spark.kubernetes.authenticate.driver.caCertFile",
    "spark.kubernetes.authenticate.driver.clientKeyFile",
    "spark.kubernetes.authenticate.driver.clientCertFile",
    "spark.kubernetes.scheduler.volcano.podGroupTemplateFile",
)
# Environment variables whose value Spark's steps read; nothing else is kept (no secrets).
ENVIRONMENT_KEYS = (
    "SPARK_USER",
    "SPARK_CONF_DIR",
    "HADOOP_CONF_DIR",
    "SPARK_LOCAL_DIRS",
    "PYSPARK_PYTHON",
    "PYSPARK_DRIVER_PYTHON",
    "SPARK_TESTING",
)
DIRECTORY_VARIABLES = ("HADOOP_CONF_DIR", "SPARK_CONF_DIR")


def local_path(key: str, value: str) -> str | None:
    """The file-system path of a conf value, None for in-image (`local:`) URIs."""
    scheme = uri_scheme(value)
    if scheme is None:
        return value
    if scheme == "file":
        path = value[len("file:") :]
        # file:///x and file:/x both name /x
        return "/" + path.lstrip("/") if path.startswith("/") else path
    if scheme == "local":
        return None
    raise SparkConfError(
        key,
        value,
        "a local path or file: URI",
        "reading it from remote storage on the submitting machine is not supported",
    )


def read_file(key: str, path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as err:
        raise SparkConfError(
            key, path, "the path of a readable regular file", err.strerror or type(err).__name__
        ) from None


def read_directory(variable: str, directory: str) -> tuple[tuple[str, ...], dict[str, bytes]]:
    """(sorted names of the regular files directly in `directory`, path -> content)."""
    try:
        entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
    except OSError as err:
        raise SparkConfError(
            variable, directory, "a readable directory", err.strerror or type(err).__name__
        ) from None
    names = []
    files: dict[str, bytes] = {}
    for entry in entries:
        if entry.is_file():
            path = posixpath.join(directory, entry.name)
            files[path] = read_file(variable, path)
            names.append(entry.name)
    return tuple(names), files


def submitting_user(environment: Mapping[str, str]) -> str:
    """Spark's Utils.getCurrentUserName on the submitter: SPARK_USER, else Hadoop's login
    user (simple auth): HADOOP_USER_NAME from the environment, else from SPARK_SUBMIT_OPTS'
    -DHADOOP_USER_NAME, else the OS user. A SPARK_USER set to "" counts (Spark takes the
    variable when it is set at all)."""
    if "SPARK_USER" in environment:
        return environment["SPARK_USER"]
    user = submit_opts.hadoop_user_name(environment)
    if user:
        return user
    import getpass  # here: it imports termios, which a submission naming its user never needs

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "root"


def gather(
    spark_conf: Mapping[str, str], environment: Mapping[str, str] | None = None
) -> LocalInputs:
    """IMPURE: read everything the steps need for `spark_conf` from this machine."""
    env_source = hidden(os.environ if environment is None else environment)
    env = {name: env_source[name] for name in ENVIRONMENT_KEYS if name in env_source}
    files: dict[str, bytes] = {}
    for key in FILE_KEYS:
        value = spark_conf.get(key)
        if value is None:
            continue
        path = local_path(key, value)
        if path is not None:
            files[value] = read_file(key, path)
    directories: dict[str, tuple[str, ...]] = {}
    conf_dirs = [(name, env[name]) for name in DIRECTORY_VARIABLES if name in env]
    if "SPARK_CONF_DIR" not in env and "spark.home" in spark_conf:
        conf_dirs.append(("spark.home", f"{spark_conf['spark.home']}/conf"))
    for variable, directory in conf_dirs:
        if not os.path.isdir(directory):
            continue  # Spark ships nothing from a directory that is not there
        names, dir_files = read_directory(variable, directory)
        directories[directory] = names
        files.update(dir_files)
    return LocalInputs(
        environment=env,
        files=files,
        directories=directories,
        spark_user=submitting_user(env_source),
    )
