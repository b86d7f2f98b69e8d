"""IMPURE: the environment spark-submit's shell wrapper hands to SparkSubmit.

`bin/spark-submit` runs `bin/spark-class`, which sources `bin/load-spark-env.sh` once (not
when SPARK_ENV_LOADED is set): it exports SPARK_CONF_DIR (default `$SPARK_HOME/conf`) and
SPARK_ENV_LOADED, and sources `$SPARK_CONF_DIR/spark-env.sh` under `set -a`, so every
variable the script assigns is exported. With SPARK_TESTING set, spark-class then unsets
HADOOP_CONF_DIR and YARN_CONF_DIR. Whatever comes out (SPARK_USER, PYSPARK_PYTHON,
SPARK_LOCAL_DIRS, HADOOP_USER_NAME, SPARK_SUBMIT_OPTS, ...) is what SparkSubmit reads.

Sourcing a shell script means running bash, as spark-submit does on the same machine. Only
`sparkk8s-submit` does this (docs/cli.md says why the operator does not).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from airflow_provider_sparkk8s.errors import SparkConfError

TYPE_CHECKING = False  # typing's, without importing typing (2 ms of the CLI's start)
if TYPE_CHECKING:
    from typing import TextIO

SPARK_ENV_SH = "spark-env.sh"
# What bash itself sets in the environment it passes on; not the script's doing.
_SHELL_VARIABLES = frozenset({"_", "SHLVL", "PWD", "OLDPWD"})
_SOURCE = 'set -a; . "$1"; set +a; exec env -0 > "$2"'


def conf_dir(environ: Mapping[str, str]) -> str | None:
    """`${SPARK_CONF_DIR:-$SPARK_HOME/conf}`; None without either (we find no Spark home)."""
    if environ.get("SPARK_CONF_DIR"):
        return environ["SPARK_CONF_DIR"]
    return f"{environ['SPARK_HOME']}/conf" if environ.get("SPARK_HOME") else None


def wrapper_environment(
    environ: Mapping[str, str], err: TextIO, *, timeout: float = 60
) -> dict[str, str]:
    """The environment after load-spark-env.sh and spark-class, for SparkSubmit."""
    result = dict(environ)
    if result.get("SPARK_ENV_LOADED"):
        return result
    result["SPARK_ENV_LOADED"] = "1"
    directory = conf_dir(result)
    if directory is not None:
        result["SPARK_CONF_DIR"] = directory
        script = os.path.join(directory, SPARK_ENV_SH)
        if os.path.isfile(script):
            result = source(script, result, err, timeout)
    if result.get("SPARK_TESTING"):
        result.pop("HADOOP_CONF_DIR", None)
        result.pop("YARN_CONF_DIR", None)
    return result


def source(script: str, environ: dict[str, str], err: TextIO, timeout: float) -> dict[str, str]:
    """Source `script` with `set -a` in bash and read back the exported environment."""
    # Imported here: most command lines have no spark-env.sh, and start-up is a CLI's time.
    import subprocess
    import tempfile

    with tempfile.NamedTemporaryFile(prefix="sparkk8s-env-") as dump:
        try:
            done = subprocess.run(
                ["bash", "-c", _SOURCE, "load-spark-env", script, dump.name],
                env=environ, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                errors="replace", timeout=timeout, check=False,
            )  # fmt: skip
        except (OSError, subprocess.TimeoutExpired) as error:
            raise SparkConfError(
                SPARK_ENV_SH, script, "a script bash can source", str(error)
            ) from None
        # Shown as spark-submit shows it, on stderr: our stdout is --dry-run's YAML.
        err.write(done.stdout + done.stderr)
        dumped = dump.read().decode("utf-8", "surrogateescape")
    if done.returncode != 0 or not dumped:  # it ran `exit`: spark-submit's wrapper ends too
        raise SparkConfError(
            SPARK_ENV_SH, script, "a script that does not exit",
            f"sourcing it ended spark-submit's wrapper (exit code {done.returncode})",
        )  # fmt: skip
    sourced = dict(entry.split("=", 1) for entry in dumped.split("\0") if "=" in entry)
    for name in _SHELL_VARIABLES:
        sourced.pop(name, None)
        if name in environ:
            sourced[name] = environ[name]
    return sourced
