"""SPARK_SUBMIT_OPTS as spark-submit's JVM reads it: its `-D` system properties.

spark-submit's launcher puts `$SPARK_SUBMIT_OPTS` on the command line of the JVM that runs
`SparkSubmit`, split the way `CommandBuilderUtils.parseOptionString` splits it (blanks
between options; single quotes, double quotes and backslash escapes group). What reaches
what is sent:
- `-Dspark.<key>=<value>`: `new SparkConf()` loads the JVM's `spark.*` system properties, and
  everything spark-submit sets afterwards (flags, `--conf`, the properties files) wins over
  them, so they are the conf's lowest layer;
- `-DHADOOP_USER_NAME=<user>`: Hadoop's login user after the environment variable of that
  name (the driver's SPARK_USER when no SPARK_USER is set).
Every other option (`-X...`, `-XX:...`, other `-D`s) only tunes the submitting JVM and is
ignored. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping

from airflow_provider_sparkk8s.errors import SparkConfError

SUBMIT_OPTS = "SPARK_SUBMIT_OPTS"
HADOOP_USER_NAME = "HADOOP_USER_NAME"


def parse_option_string(text: str, source: str = SUBMIT_OPTS) -> list[str]:
    """The JVM options in `text`, split as spark-submit's launcher splits them; `source`
    names where the text came from when it cannot be split."""
    options: list[str] = []
    current: list[str] = []
    has_data = escaped = in_single = in_double = False
    for char in text:
        if escaped:
            current.append(char)
            escaped = False
        elif char == "\\" and not in_single:
            escaped = has_data = True
        elif char == "'" and not in_double:
            in_single, has_data = not in_single, True
        elif char == '"' and not in_single:
            in_double, has_data = not in_double, True
        elif char.isspace() and not (in_single or in_double):
            if has_data:
                options.append("".join(current))
                current, has_data = [], False
        else:
            current.append(char)
            has_data = True
    if in_single or in_double or escaped:
        raise SparkConfError(
            source, text, "JVM options with closed quotes and no trailing backslash",
            f"spark-submit: Invalid option string: {text}",
        )  # fmt: skip
    if has_data:
        options.append("".join(current))
    return options


def system_properties(environ: Mapping[str, str]) -> dict[str, str]:
    """The `-D` system properties of SPARK_SUBMIT_OPTS (the last of a name wins, as in Java);
    `-Dname` alone is the empty string."""
    found: dict[str, str] = {}
    for option in parse_option_string(environ.get(SUBMIT_OPTS, "")):
        if option.startswith("-D") and len(option) > 2:
            name, _, value = option[2:].partition("=")
            found[name] = value
    return found


def spark_properties(environ: Mapping[str, str]) -> dict[str, str]:
    """The `spark.*` system properties: the conf's lowest layer."""
    return {k: v for k, v in system_properties(environ).items() if k.startswith("spark.")}


def hadoop_user_name(environ: Mapping[str, str]) -> str | None:
    """Hadoop's login user by name: the environment variable, else the system property."""
    if HADOOP_USER_NAME in environ:
        return environ[HADOOP_USER_NAME]
    return system_properties(environ).get(HADOOP_USER_NAME)
