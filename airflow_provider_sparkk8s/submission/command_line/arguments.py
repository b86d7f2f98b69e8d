"""spark-submit's command line, for Kubernetes cluster mode, as plain data.

What spark-submit's launcher (`SparkSubmitCommandBuilder`), `SparkSubmitArguments` and
`SparkSubmit.prepareSubmitEnvironment` do before the Kubernetes client runs: parse the
options (each line's own set), merge the properties file(s) (or `spark-defaults.conf` from
the conf dir), let flags win over conf keys (but the launcher's driver JVM flags only when
they come later than their `--conf`), add SPARK_SUBMIT_OPTS' `-Dspark.*` properties below
everything, drop non-`spark.` keys, resolve dependency lists to URIs, add the primary jar to
`spark.jars`, and set `spark.master`, `spark.submit.deployMode`, `spark.app.name`,
`spark.app.submitTime` and an always-present `spark.submit.pyFiles`.

Pure: files are read through the `read_text` callable the shell passes in, and the
submit time comes in as a number.
"""

from __future__ import annotations

import logging
import os
import posixpath
from collections.abc import Callable, Mapping, Sequence
from dataclasses import field

from airflow_provider_sparkk8s.environment import hidden
from airflow_provider_sparkk8s.errors import SparkConfError
from airflow_provider_sparkk8s.records import record
from airflow_provider_sparkk8s.submission.command_line import argument_checks, submit_opts
from airflow_provider_sparkk8s.submission.command_line.jar_manifest import (
    ReadJar,
    main_class_from_jar,
    no_jars,
)
from airflow_provider_sparkk8s.submission.command_line.local_globs import (
    ListFiles,
    no_listing,
    resolve_local_globs,
)
from airflow_provider_sparkk8s.submission.command_line.master_url import normalize_master_url
from airflow_provider_sparkk8s.submission.command_line.packages import (
    IVY_SETTINGS_KEY,
    PACKAGE_FLAGS,
    check_packages,
)
from airflow_provider_sparkk8s.submission.conf import PYTHON_RUNNER, R_RUNNER, MainAppResource
from airflow_provider_sparkk8s.submission.conf_values import version_tuple
from airflow_provider_sparkk8s.submission.java_text import java_file_name, java_trim
from airflow_provider_sparkk8s.submission.spark_line import driver_image, release_for_checks
from airflow_provider_sparkk8s.submission.uris import NO_RESOURCE, uri_scheme

TYPE_CHECKING = False  # typing's, without importing typing (2 ms of the CLI's start)
if TYPE_CHECKING:
    from typing import Any, Literal, TypeAlias

log = logging.getLogger(__name__)

Action: TypeAlias = 'Literal["submit", "kill", "status", "help", "version"]'
ReadText = Callable[[str], "str | None"]  # path -> text, None when the file does not exist

# Options that take a value. spark-submit also accepts `--opt=value`.
VALUE_OPTIONS = {
    "--master", "--deploy-mode", "--class", "--name", "--jars", "--files", "--py-files",
    "--archives", "--conf", "-c", "--properties-file", "--driver-memory", "--driver-cores",
    "--driver-java-options", "--driver-library-path", "--driver-class-path",
    "--executor-memory", "--executor-cores", "--num-executors", "--total-executor-cores",
    "--proxy-user", "--principal", "--keytab", "--packages", "--exclude-packages",
    "--repositories", "--queue", "--kill", "--status", "--remote",
    "--driver-default-class-path", "--extra-properties-file",
    # ours
    "--spark-version", "--policy",
}  # fmt: skip
SWITCHES = {
    "--verbose", "-v", "--supervise", "--help", "-h", "--version", "--load-spark-defaults",
    # ours
    "--dry-run",
}  # fmt: skip
# Options a line's parser does not know yet: (option, first line with it). spark-submit's
# launcher stops at them with "Unrecognized option".
LINE_OPTIONS = {
    "--load-spark-defaults": (4, 0),
    "--driver-default-class-path": (4, 0),
    "--extra-properties-file": (4, 2),
}
UNSUPPORTED = {
    "--queue": "a YARN option",
    "--supervise": "a standalone-cluster option",
    "--total-executor-cores": "a standalone option",
}

# Flag -> the conf key it wins over, and the env var spark-submit falls back to.
FLAG_CONF = {
    "--driver-memory": ("spark.driver.memory", "SPARK_DRIVER_MEMORY"),
    "--driver-cores": ("spark.driver.cores", None),
    "--executor-memory": ("spark.executor.memory", "SPARK_EXECUTOR_MEMORY"),
    "--executor-cores": ("spark.executor.cores", "SPARK_EXECUTOR_CORES"),
    "--num-executors": ("spark.executor.instances", None),
    "--driver-java-options": ("spark.driver.extraJavaOptions", None),
    "--driver-library-path": ("spark.driver.extraLibraryPath", None),
    "--driver-class-path": ("spark.driver.extraClassPath", None),
    "--driver-default-class-path": ("spark.driver.defaultExtraClassPath", None),
    "--principal": ("spark.kerberos.principal", None),
    "--keytab": ("spark.kerberos.keytab", None),
}
# The launcher (SparkSubmitCommandBuilder) turns these flags into their conf key in one map
# with the --conf pairs, so for them the later of the flag and the --conf wins.
DRIVER_JVM_FLAGS = {
    flag: FLAG_CONF[flag][0]
    for flag in ("--driver-memory", "--driver-java-options", "--driver-library-path",
                 "--driver-class-path", "--driver-default-class-path")
}  # fmt: skip
DEPENDENCY_FLAGS = {
    "--jars": "spark.jars",
    "--files": "spark.files",
    "--archives": "spark.archives",
    "--py-files": "spark.submit.pyFiles",
}
DEFAULTS_FILE = "spark-defaults.conf"


@record
class ParsedCommandLine:
    """The options as written, before any conf is merged."""

    options: Mapping[str, str]  # last value wins, as in spark-submit
    confs: tuple[tuple[str, str], ...]  # --conf pairs in order
    switches: frozenset[str]
    primary_resource: str | None
    app_args: tuple[str, ...]
    extra_properties_files: tuple[str, ...] = ()  # --extra-properties-file, in order


@record
class SubmitArguments:
    """What the Kubernetes client receives from spark-submit, plus our CLI's own flags."""

    action: Action
    spark_conf: Mapping[str, str]
    main_app_resource: MainAppResource
    main_class: str | None
    app_args: tuple[str, ...] = ()
    proxy_user: str | None = None
    verbose: bool = False
    dry_run: bool = False
    spark_version: str | None = None
    policy_file: str | None = None  # --policy: the platform policy to check against
    submission_glob: str | None = None  # --kill / --status
    ignored_keys: tuple[str, ...] = field(default=())  # non-spark. conf keys dropped


def parse_command_line(argv: Sequence[str]) -> ParsedCommandLine:
    """Split argv like SparkSubmitOptionParser: options until the primary resource, then args."""
    options: dict[str, str] = {}
    confs: list[tuple[str, str]] = []
    extra_files: list[str] = []
    switches: set[str] = set()
    index = 0
    while index < len(argv):
        arg = argv[index]
        name, has_inline, inline = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if name in VALUE_OPTIONS:
            if has_inline:
                value = inline
            elif index + 1 < len(argv):
                index += 1
                value = argv[index]
            else:
                raise SparkConfError(name, None, f"a value after {name}")
            if name in ("--conf", "-c"):
                key, conf_value = _conf_pair(value)
                confs.append((key, conf_value))
                for flag, flag_key in DRIVER_JVM_FLAGS.items():
                    if key == flag_key:
                        options.pop(flag, None)  # a later --conf wins over the flag
            elif name == "--extra-properties-file":
                extra_files.append(value)
                options[name] = value
            else:
                options[name] = value
        elif arg in SWITCHES:
            switches.add(arg)
        elif arg.startswith("-"):
            raise SparkConfError("argument", arg, "a spark-submit option (see --help)")
        else:
            return ParsedCommandLine(options, tuple(confs), frozenset(switches), arg,
                                     tuple(argv[index + 1:]), tuple(extra_files))  # fmt: skip
        index += 1
    return ParsedCommandLine(
        options, tuple(confs), frozenset(switches), None, (), tuple(extra_files)
    )


def _conf_pair(pair: str) -> tuple[str, str]:
    key, sep, value = pair.partition("=")
    if not sep or not key:
        raise SparkConfError("--conf", pair, "KEY=VALUE with a non-empty key")
    return key, value


def load_java_properties(text: str) -> dict[str, str]:
    """`java.util.Properties.load` on text: comments, continuations, separators, escapes."""
    result: dict[str, str] = {}
    for logical in _logical_lines(text):
        raw_key, rest = _split_key(logical)
        try:
            key = _unescape(raw_key)
            result[key] = _unescape(rest)
        except _MalformedEscape as malformed:
            # The escape only, never the whole value: a properties file may hold secrets.
            raise SparkConfError(
                f"properties file key {raw_key}",
                malformed.escape,
                "\\u followed by exactly four hex digits (Java: Malformed \\uxxxx encoding)",
            ) from None
    return result


class _MalformedEscape(ValueError):
    def __init__(self, escape: str) -> None:
        super().__init__(escape)
        self.escape = escape


_BLANKS = " \t\f"


def _logical_lines(text: str) -> list[str]:
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    logical: list[str] = []
    pending: str | None = None
    for raw in lines:
        line = raw.lstrip(_BLANKS)
        if pending is None and (not line or line[0] in "#!"):
            continue
        line = line if pending is None else pending + line
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending = line[:-1]
            continue
        pending = None
        logical.append(line)
    if pending is not None:
        logical.append(pending)
    return logical


def _split_key(line: str) -> tuple[str, str]:
    index = 0
    while index < len(line):
        char = line[index]
        if char == "\\":
            index += 2
            continue
        if char in "=:" or char in _BLANKS:
            break
        index += 1
    key, rest = line[:index], line[index:]
    rest = rest.lstrip(_BLANKS)
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(_BLANKS)
    return key, rest


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


def _unescape(text: str) -> str:
    """Properties.loadConvert: `\\uXXXX` takes exactly four hex digits or is an error, as in
    Java; other escaped characters stand for themselves."""
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char != "\\" or index + 1 >= len(text):
            out.append(char)
            index += 1
            continue
        nxt = text[index + 1]
        if nxt == "u":
            digits = text[index + 2 : index + 6]
            if len(digits) < 4 or not _HEX_DIGITS.issuperset(digits):
                raise _MalformedEscape(f"\\u{digits}")
            out.append(chr(int(digits, 16)))
            index += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        index += 2
    return _join_surrogate_pairs("".join(out))


def _join_surrogate_pairs(text: str) -> str:
    """Java strings are UTF-16: `\\ud83d\\ude00` is one character there, so it is one here."""
    if not any("\ud800" <= char <= "\udfff" for char in text):
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass")


def check_line_options(parsed: ParsedCommandLine, release: str) -> None:
    """An option newer than the Spark line is unknown to that line's spark-submit."""
    version = version_tuple(release)[:2]
    for option, since in LINE_OPTIONS.items():
        if version < since and (option in parsed.options or option in parsed.switches):
            raise SparkConfError(
                option, parsed.options.get(option, True), f"an option Spark {release} knows",
                f"spark-submit {release}: Unrecognized option: {option}; it exists from "
                f"Spark {since[0]}.{since[1]}",
            )  # fmt: skip


def _defaults_files(
    parsed: ParsedCommandLine, environ: Mapping[str, str]
) -> list[tuple[str, str | None]]:
    """(file, the option naming it: it must exist) to merge, in precedence order: the
    --extra-properties-file files (the last first), --properties-file, else (or also, with
    --load-spark-defaults) spark-defaults.conf of SPARK_CONF_DIR or SPARK_HOME/conf."""
    extra = "--extra-properties-file"
    files: list[tuple[str, str | None]] = [
        (path, extra) for path in reversed(parsed.extra_properties_files)
    ]
    given = parsed.options.get("--properties-file")
    if given:
        files.append((given, "--properties-file"))
    conf_dir = environ.get("SPARK_CONF_DIR") or (
        posixpath.join(environ["SPARK_HOME"], "conf") if environ.get("SPARK_HOME") else None
    )
    if conf_dir and (not given or "--load-spark-defaults" in parsed.switches):
        files.append((posixpath.join(conf_dir, DEFAULTS_FILE), None))
    return files


def _read_properties(path: str, option: str | None, read_text: ReadText) -> dict[str, str]:
    text = read_text(path)
    if text is None:
        if option is not None:
            raise SparkConfError(option, path, "the path of a readable file")
        return {}
    return {key: java_trim(value) for key, value in load_java_properties(text).items()}


def resolve_uri(path: str, cwd: str) -> str:
    """Utils.resolveURI: a bare path becomes an absolute `file:` URI; URIs stay."""
    if uri_scheme(path) is not None:
        return path
    base, hash_, fragment = path.partition("#")
    absolute = posixpath.normpath(posixpath.join(cwd, base))
    return f"file:{absolute}" + (f"#{fragment}" if hash_ else "")


def resolve_uri_list(value: str, cwd: str) -> str:
    """Utils.stringToSeq then resolveURI on each entry, joined with ','."""
    entries = [entry.strip() for entry in value.split(",")]
    return ",".join(resolve_uri(entry, cwd) for entry in entries if entry)


def _main_resource(primary: str | None) -> MainAppResource:
    if primary is None or primary == NO_RESOURCE:
        return MainAppResource("java", None)
    if primary.endswith(".py"):
        return MainAppResource("python", primary)
    if primary.endswith((".R", ".r")):
        return MainAppResource("r", primary)
    return MainAppResource("java", primary)


def _merged_conf(
    parsed: ParsedCommandLine, environ: Mapping[str, str], read_text: ReadText
) -> tuple[dict[str, str], tuple[str, ...]]:
    """--conf pairs, then the properties file(s) for keys not given; non-spark. keys dropped."""
    conf = dict(parsed.confs)
    for path, option in _defaults_files(parsed, environ):
        for key, value in _read_properties(path, option, read_text).items():
            conf.setdefault(key, value)
    ignored = tuple(key for key in conf if not key.startswith("spark."))
    for key in ignored:
        log.warning("Ignoring non-Spark config property: %s", key)
        del conf[key]
    return conf, ignored


def _master(parsed: ParsedCommandLine, conf: Mapping[str, str], environ: Mapping[str, str]) -> str:
    """--master, else spark.master, else $MASTER; `k8s://host:port` gets https (as Spark)."""
    master = parsed.options.get("--master") or conf.get("spark.master") or environ.get("MASTER")
    if not master:
        raise SparkConfError("--master", master, "k8s://https://<host>:<port>")
    normalize_master_url(master)  # raises on a non-k8s master
    if "://" not in master[len("k8s://") :]:
        master = "k8s://https://" + master[len("k8s://") :]
    return master


def parse_spark_submit(
    argv: Sequence[str],
    *,
    environ: Mapping[str, str] | None = None,
    read_text: ReadText | None = None,
    submit_time_ms: int = 0,
    cwd: str | None = None,
    list_files: ListFiles = no_listing,
    spark_version: str | None = None,
    image: str | None = None,
    read_jar: ReadJar = no_jars,
) -> SubmitArguments:
    """spark-submit's argv -> the Spark conf and main resource the k8s client would get.

    `list_files` expands local dependency entries (local_globs.py); the shell passes
    `list_local_files`; `read_jar` finds a jar's manifest (the shell passes
    `jar_manifest.read_jar`). `spark_version` and `image`: what the operator sets beside the argv
    (`--spark-version` and the conf's image win), for the checks that differ by release.
    """
    environ = hidden(os.environ if environ is None else environ)  # a snapshot
    read_text = read_text or _no_files
    cwd = cwd or "/"
    parsed = parse_command_line(argv)
    spark_version = parsed.options.get("--spark-version") or spark_version
    common = _common_fields(parsed, spark_version)
    _check_before_reading(parsed, spark_version, image)
    if {"--help", "-h"} & parsed.switches:
        return SubmitArguments("help", {}, MainAppResource("java", None), None, **common)
    if "--version" in parsed.switches:
        return SubmitArguments("version", {}, MainAppResource("java", None), None, **common)

    conf, ignored = _merged_conf(parsed, environ, read_text)
    _check_merged_conf(parsed, conf, environ, spark_version, image)
    conf["spark.master"] = _master(parsed, conf, environ)
    kill_or_status = _kill_or_status_arguments(parsed, conf, ignored, common)
    if kill_or_status is not None:
        return kill_or_status

    conf["spark.submit.deployMode"] = _cluster_deploy_mode(parsed, conf, environ)
    resource, main_class = _application(parsed, cwd, read_jar)
    _name_the_app(parsed, conf, resource)
    _apply_flags(parsed, conf, environ, read_text)
    _resolve_dependencies(parsed, conf, resource, cwd, list_files)
    _add_submit_defaults(conf, environ, submit_time_ms)
    return SubmitArguments(
        "submit", conf, resource, main_class, app_args=parsed.app_args,
        proxy_user=parsed.options.get("--proxy-user") or None, ignored_keys=ignored, **common,
    )  # fmt: skip


def _common_fields(parsed: ParsedCommandLine, spark_version: str | None) -> dict[str, Any]:
    """The SubmitArguments fields every action carries, whatever it is."""
    return {
        "verbose": bool({"--verbose", "-v"} & parsed.switches),
        "dry_run": "--dry-run" in parsed.switches,
        "spark_version": spark_version,
        "policy_file": parsed.options.get("--policy"),
    }


def _check_before_reading(
    parsed: ParsedCommandLine, spark_version: str | None, image: str | None
) -> None:
    """What is refused before any file is read: other cluster managers' options, then an
    option the line does not know (the launcher stops there first)."""
    for flag, hint in UNSUPPORTED.items():
        if flag in parsed.options or flag in parsed.switches:
            raise SparkConfError(flag, parsed.options.get(flag, True), "not given", hint)
    # The image may only be known once the properties files are read (checked again then).
    check_line_options(
        parsed, release_for_checks(spark_version, driver_image(dict(parsed.confs), image))
    )


def _check_merged_conf(
    parsed: ParsedCommandLine,
    conf: dict[str, str],
    environ: Mapping[str, str],
    spark_version: str | None,
    image: str | None,
) -> None:
    """The checks that need the properties files read: the line (its image may be in them),
    the driver's Java options, the arguments."""
    release = release_for_checks(spark_version, driver_image(conf, image))
    check_line_options(parsed, release)
    argument_checks.check_driver_java_options(parsed.options, conf, spark_version=release)
    argument_checks.check_arguments(parsed.options, conf, environ, spark_version=release)


def _kill_or_status_arguments(
    parsed: ParsedCommandLine,
    conf: dict[str, str],
    ignored: tuple[str, ...],
    common: Mapping[str, Any],
) -> SubmitArguments | None:
    """--kill or --status (the first given, kill before status); None: a submission."""
    actions: tuple[tuple[Action, str], ...] = (("kill", "--kill"), ("status", "--status"))
    for action, flag in actions:
        if flag in parsed.options:
            return SubmitArguments(
                action, conf, MainAppResource("java", None), None,
                submission_glob=parsed.options[flag], ignored_keys=ignored, **common,
            )  # fmt: skip
    return None


def _cluster_deploy_mode(
    parsed: ParsedCommandLine, conf: Mapping[str, str], environ: Mapping[str, str]
) -> str:
    """The deploy mode as spark-submit finds it; only cluster mode is served."""
    deploy_mode = (
        parsed.options.get("--deploy-mode")
        or conf.get("spark.submit.deployMode")
        or environ.get("DEPLOY_MODE")
        or "client"
    )
    if deploy_mode != "cluster":
        raise SparkConfError(
            "--deploy-mode", deploy_mode, "cluster", "the driver runs in a pod on Kubernetes"
        )
    return "cluster"


def _application(
    parsed: ParsedCommandLine, cwd: str, read_jar: ReadJar
) -> tuple[MainAppResource, str | None]:
    """The primary resource (as a URI) and the class the driver runs: --class, else the
    jar's manifest's; Python and R applications run Spark's runner for them."""
    primary = parsed.primary_resource
    if primary is None:
        raise SparkConfError(
            "primary resource", None, "the application's jar, .py or .R file after the options"
        )
    resource = _main_resource(primary)
    if resource.primary_resource is not None:
        resource = MainAppResource(resource.kind, resolve_uri(primary, cwd))
    main_class = parsed.options.get("--class")
    argument_checks.check_cluster_mode_application(primary, main_class)
    if resource.kind == "java" and not main_class:
        # As spark-submit: the jar's manifest names the class.
        main_class = main_class_from_jar(resource.primary_resource or primary, read_jar)
        argument_checks.check_cluster_mode_application(primary, main_class)
    if resource.kind == "python":
        main_class = PYTHON_RUNNER
    elif resource.kind == "r":
        main_class = R_RUNNER
    return resource, main_class


def _name_the_app(
    parsed: ParsedCommandLine, conf: dict[str, str], resource: MainAppResource
) -> None:
    """spark.app.name: --name, the conf's, --class, else the primary resource's file name."""
    # spark-submit names the app before it reads a manifest: the file then, not its class.
    given_class = parsed.options.get("--class")
    name = parsed.options.get("--name") or conf.get("spark.app.name") or given_class
    if not name and resource.primary_resource:
        name = java_file_name(resource.primary_resource)
    if name:
        conf["spark.app.name"] = name


def _apply_flags(
    parsed: ParsedCommandLine,
    conf: dict[str, str],
    environ: Mapping[str, str],
    read_text: ReadText,
) -> None:
    """The resource and package flags over their conf keys (FLAG_CONF, PACKAGE_FLAGS)."""
    for flag, (key, env_var) in FLAG_CONF.items():
        value = parsed.options.get(flag) or conf.get(key) or (env_var and environ.get(env_var))
        if value:
            conf[key] = value
    # Passed through for the driver to resolve (packages.py); checked as spark-submit does.
    for flag, key in PACKAGE_FLAGS.items():
        if parsed.options.get(flag):
            conf[key] = parsed.options[flag]
    ivy_settings = conf.get(IVY_SETTINGS_KEY)
    check_packages(conf, None if ivy_settings is None else read_text(ivy_settings) is not None)


def _resolve_dependencies(
    parsed: ParsedCommandLine,
    conf: dict[str, str],
    resource: MainAppResource,
    cwd: str,
    list_files: ListFiles,
) -> None:
    """--jars, --files, --archives and --py-files (or their keys) as URI lists, local globs
    expanded; a jar application's primary jar appended to spark.jars."""
    for flag, key in DEPENDENCY_FLAGS.items():
        value = parsed.options.get(flag) or conf.get(key)
        if value is not None:
            conf[key] = resolve_local_globs(key, resolve_uri_list(value, cwd), list_files)
    if resource.kind == "java":
        # The primary jar reaches the driver through spark.jars (set even when empty).
        jars = [j for j in conf.get("spark.jars", "").split(",") if j]
        conf["spark.jars"] = ",".join([*jars, *filter(None, [resource.primary_resource])])


def _add_submit_defaults(
    conf: dict[str, str], environ: Mapping[str, str], submit_time_ms: int
) -> None:
    """What SparkSubmit sets below everything given: pyFiles, the submit time, and the
    JVM's -Dspark.* options; the client's own driver host never travels."""
    conf.setdefault("spark.submit.pyFiles", "")
    conf.setdefault("spark.app.submitTime", str(submit_time_ms))
    # SparkSubmit's `new SparkConf()` holds the JVM's -Dspark.* options; all else wins.
    for key, value in submit_opts.spark_properties(environ).items():
        conf.setdefault(key, value)
    conf.pop("spark.driver.host", None)


def _no_files(path: str) -> str | None:
    return None


def read_text_file(path: str) -> str | None:
    """IMPURE: the shell's `read_text`: a file's UTF-8 text, None when it does not exist."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise SparkConfError("file", path, "a readable file", str(error)) from None
