"""`sparkk8s-submit`: spark-submit for Kubernetes cluster mode, without a JVM.

Same arguments as spark-submit (`--master k8s://... --deploy-mode cluster ...`), plus
`--spark-version X.Y.Z` (which release's objects to build; by default the release in the
official image's tag, e.g. `apache/spark:3.5.1`, else 4.3.0 with a warning) and `--dry-run`
(print the YAML of every object, secrets masked; send nothing, needs no cluster). Like
spark-submit it waits for the driver when `spark.kubernetes.submission.waitAppCompletion` is
true (the default), printing state changes and, every `spark.kubernetes.report.interval`,
spark-submit's
`Application status for <appId> (phase: <phase>)`; unlike spark-submit it exits non-zero
when the application fails.
`--kill` and `--status` take `namespace:pod`, where the pod name may hold globs.

With Kueue (`--conf spark.kubernetes.kueue.queueName=<LocalQueue>`) a queued driver is
reported as "queued in ClusterQueue X: <Kueue's reason>", and
`--conf spark.kubernetes.kueue.queueTimeout=30min` bounds the wait: past it the driver and
its Workload are deleted and the exit code is 4 (infrastructure: QueueTimeout). The limit is
checked whenever the watch brings news, and at least every quarter of it (3 to 30 s).

Exit codes (docs/operator.md, "Failure kinds"): 0 success, 1 application error (or an API
request refused), 2 invalid input, 3 driver out of memory, 4 infrastructure (evicted,
preempted, deleted, node lost, never started; the API server unreachable), 5 run timeout.
"""

from __future__ import annotations

import logging
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence

# Only what every command needs is imported here: start-up is most of a CLI's wall time.
# A command imports the rest when it gets there (tests/cli/test_cli_startup.py holds the
# list of what start-up must not import).
from airflow_provider_sparkk8s.cli.spark_env import wrapper_environment
from airflow_provider_sparkk8s.environment import hidden
from airflow_provider_sparkk8s.errors import (
    ApplicationFailed,
    KubeApiError,
    KubeConfigError,
    KubeConnectionError,
    KubeTLSVerificationError,
    SparkConfError,
    SparkK8sError,
)
from airflow_provider_sparkk8s.records import record
from airflow_provider_sparkk8s.services.submit import submission
from airflow_provider_sparkk8s.submission.conf_values import get_bool, parse_time_ms
from airflow_provider_sparkk8s.submission.spark_line import (
    DEFAULT_SPARK_VERSION,
    SparkLine,
    choose_spark_line,
    driver_image,
)

TYPE_CHECKING = False  # typing's, without importing typing (2 ms of the CLI's start)
if TYPE_CHECKING:
    from typing import NoReturn, Self, TextIO

    from airflow_provider_sparkk8s.application.policy.platform_policy import Policy
    from airflow_provider_sparkk8s.kube.sync_client import KubeClient
    from airflow_provider_sparkk8s.monitoring.reducer import ApplicationState, Pod
    from airflow_provider_sparkk8s.services.submit.uploader import Storage
    from airflow_provider_sparkk8s.submission.command_line.arguments import SubmitArguments

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
POLICY_FILE_ENV = "SPARKK8S_POLICY_FILE"
# One exit code per failure kind (errors.FAILURE_CLASSES): what a script can branch on.
EXIT_CODES = {
    "application_error": EXIT_FAILED,
    "failed": EXIT_FAILED,
    "out_of_memory": 3,
    "infrastructure": 4,
    "timeout": 5,
    "configuration_error": 6,
}
WAIT_KEY = "spark.kubernetes.submission.waitAppCompletion"
REPORT_INTERVAL_KEY = "spark.kubernetes.report.interval"

USAGE = """\
Usage: sparkk8s-submit --master k8s://https://<host>:<port> --deploy-mode cluster [options]
                       <app jar | python file | R file> [app arguments]
       sparkk8s-submit --master k8s://... --kill <namespace>:<driver pod, globs allowed>
       sparkk8s-submit --master k8s://... --status <namespace>:<driver pod, globs allowed>

spark-submit options: --name --class --conf/-c K=V --properties-file --jars --files
  --py-files --archives --driver-memory --driver-cores --executor-memory --executor-cores
  --num-executors --proxy-user --principal --keytab --driver-java-options
  --driver-class-path --driver-library-path --verbose --remote (refused with a master)
  --load-spark-defaults --driver-default-class-path (4.0+) --extra-properties-file (4.2+)
Like spark-submit, sources ${{SPARK_CONF_DIR:-$SPARK_HOME/conf}}/spark-env.sh first and reads
  SPARK_SUBMIT_OPTS' -Dspark.* (docs/cli.md).
Added: --spark-version X.Y.Z (default: the release in an official image's tag, such as
  apache/spark:3.5.1, else {version})  --dry-run (print the objects as YAML)
  --policy FILE (a platform policy, JSON or YAML, checked before anything is sent;
  default: $SPARKK8S_POLICY_FILE; see docs/policy.md)

Credentials, as spark-submit finds them: the kubeconfig named by $KUBECONFIG (else
  ~/.kube/config), context spark.kubernetes.context (else its current context); with no
  kubeconfig, the pod's service account when run inside a cluster. These override it:
  spark.kubernetes.authenticate.submission.{{oauthToken,oauthTokenFile,caCertFile,
  clientCertFile,clientKeyFile}} and spark.kubernetes.trust.certificates.
Namespace: spark.kubernetes.namespace, else "default" (as spark-submit, the kubeconfig's
  namespace is not used).
"""


@record
class Outcome:
    exit_code: int
    state: ApplicationState | None = None


def conf_storage(upload_path: str | None, properties: Mapping[str, str]) -> Storage:
    """Where uploads go: the submission's `spark.hadoop.fs.s3a.*` keys, else the backend's
    environment (as spark-submit finds its credentials)."""
    from airflow_provider_sparkk8s.services.submit.uploader import Storage

    return Storage.from_spark_conf(properties)


def _print(out: TextIO, message: str) -> None:
    stamp = time.strftime("%H:%M:%S")
    print(f"{stamp} {message}", file=out, flush=True)


class StderrLog:
    """The submission service's messages as sparkk8s-submit prints them: time-stamped."""

    def __init__(self, out: TextIO) -> None:
        self._out = out

    def info(self, msg: str, *args: object) -> None:
        _print(self._out, msg % args)

    def warning(self, msg: str, *args: object) -> None:
        _print(self._out, msg % args)


def _verbose(arguments: SubmitArguments, out: TextIO) -> None:
    from airflow_provider_sparkk8s.application.policy.redaction import REDACTED, redaction_pattern

    print("Parsed arguments:", file=out)
    print(f"  main resource   {arguments.main_app_resource.primary_resource}", file=out)
    print(f"  main class      {arguments.main_class}", file=out)
    print(f"  app arguments   {list(arguments.app_args)}", file=out)
    print(f"  proxy user      {arguments.proxy_user}", file=out)
    print("Spark properties:", file=out)
    pattern = redaction_pattern(arguments.spark_conf)
    for key, value in sorted(arguments.spark_conf.items()):
        shown = REDACTED if pattern.search(key) or pattern.search(value) else value
        print(f"  ({key},{shown})", file=out)
    for key in arguments.ignored_keys:
        print(f"Ignoring non-Spark config property: {key}", file=out)


def driver_events(
    client: KubeClient, namespace: str, pod_name: str, window_seconds: int | None = None
) -> Iterator[Pod | None]:
    """The driver pod as it changes, by watch (None once it is gone), as spark-submit's
    watcher follows it; the clock is read at least every `window_seconds` (by default the
    pods service's WATCH_SECONDS)."""
    from airflow_provider_sparkk8s.services.pods.driver_pods import WATCH_SECONDS, DriverPods

    window = WATCH_SECONDS if window_seconds is None else window_seconds
    return DriverPods(client).watch_driver(namespace, pod_name, window)


def queue_window_seconds(queue_timeout: float) -> int:
    """The watch window with a queue timeout: a quarter of it, 3 to 30 s (a queued driver
    does not change, so window ends are when its timeout is checked)."""
    from airflow_provider_sparkk8s.services.pods.driver_pods import (
        MIN_WINDOW_SECONDS,
        WATCH_SECONDS,
    )

    return max(MIN_WINDOW_SECONDS, min(WATCH_SECONDS, math.ceil(queue_timeout / 4)))


class StatusReporter:
    """spark-submit's `Application status for <appId> (phase: <phase>)`, every interval.

    From a thread of its own, because the watch blocks in a read between pod changes.
    """

    def __init__(self, out: TextIO, app_id: str, interval_seconds: float) -> None:
        self.phase = "unknown"
        self._out = out
        self._app_id = app_id
        self._interval = interval_seconds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._report, name="status-reporter", daemon=True)

    def seen(self, pod: Pod | None) -> None:
        if pod is not None:
            self.phase = (pod.get("status") or {}).get("phase") or "unknown"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _report(self) -> None:
        while not self._stop.wait(self._interval):
            _print(self._out, f"Application status for {self._app_id} (phase: {self.phase})")


def report_interval_seconds(conf: Mapping[str, str]) -> float:
    """`spark.kubernetes.report.interval` (default 1s); Spark requires it to be positive."""
    value = conf.get(REPORT_INTERVAL_KEY, "1s")
    millis = parse_time_ms(REPORT_INTERVAL_KEY, value)
    if millis <= 0:
        raise SparkConfError(REPORT_INTERVAL_KEY, value, "a positive time, such as 1s or 500ms")
    return millis / 1000


def wait_for_driver(
    client: KubeClient,
    rendered_namespace: str,
    pod_name: str,
    out: TextIO,
    events: Callable[..., Iterator[Pod | None]] = driver_events,
    seen: Callable[[Pod | None], None] = lambda pod: None,
    application_id: str = "",
    queue_timeout: float | None = None,
    submitted_at: float | None = None,
) -> ApplicationState:
    """Follow the driver until it ends; print each state change; hand each pod to `seen`.

    Admitted through Kueue (`application_id` names its Workload): its queue is read while
    it waits, and past `queue_timeout` (counted from `submitted_at`, else now) the driver and
    its Workload are deleted. A driver whose image its registry says does not exist ends the
    wait (`ImageNotFound`) and is deleted too: its kubelet would retry the pull forever."""
    # Imported here: a submission that does not wait (waitAppCompletion=false) never follows,
    # and start-up time is what a CLI user feels.
    from airflow_provider_sparkk8s.application.following.follower import FollowSpec
    from airflow_provider_sparkk8s.application.following.timeouts import QUEUE_TIMEOUT
    from airflow_provider_sparkk8s.monitoring.image_pull import IMAGE_NOT_FOUND
    from airflow_provider_sparkk8s.services.following.follow_runs import follow_driver
    from airflow_provider_sparkk8s.services.pods.driver_pods import DriverPods

    pods = DriverPods(client)
    versions = (
        events(client, rendered_namespace, pod_name)
        if queue_timeout is None
        else events(
            client, rendered_namespace, pod_name, window_seconds=queue_window_seconds(queue_timeout)
        )
    )
    step = follow_driver(
        versions,
        FollowSpec(
            application_id,
            rendered_namespace,
            pod_name,
            start_time=time.time() if submitted_at is None else submitted_at,
            queue_timeout=queue_timeout,
        ),
        seen=seen,
        on_transition=lambda state: _print(
            out, f"{rendered_namespace}:{pod_name} {state.describe()}"
        ),
        read_queue=pods.queue_view if application_id else None,
    )
    ended = step.following.ended
    assert ended is not None  # follow_driver returns the step that ends
    why = {QUEUE_TIMEOUT: "queue timeout", IMAGE_NOT_FOUND: "its image does not exist"}
    if ended.reason in why:  # a driver that would never end by itself
        _print(out, f"Deleting driver pod {rendered_namespace}:{pod_name} ({why[ended.reason]}).")
        pods.delete(rendered_namespace, pod_name)  # its Workload goes with it
    return ended


def read_policy(arguments: SubmitArguments, environ: Mapping[str, str]) -> Policy | None:
    """`--policy FILE`, else `$SPARKK8S_POLICY_FILE`; None: no policy (nothing changes)."""
    path = arguments.policy_file or environ.get(POLICY_FILE_ENV) or None
    if path is None:
        return None
    from airflow_provider_sparkk8s.application.policy.platform_policy import read_policy_text

    try:
        with open(os.path.expanduser(path), encoding="utf-8") as handle:
            text = handle.read()
    except OSError as error:
        raise SparkConfError("--policy", path, "a readable policy file", error.strerror) from None
    return read_policy_text(text, f"file {path}")


def _client(conf: Mapping[str, str], environ: Mapping[str, str]) -> KubeClient:
    from airflow_provider_sparkk8s.kube.sync_client import KubeClient
    from airflow_provider_sparkk8s.services.cluster_access.client_settings import (
        spark_submit_settings,
    )

    return KubeClient(spark_submit_settings(conf, environ))


def _not_found(glob: str) -> str:
    return "No applications found." if "*" in glob else "Application not found."


def _grace_seconds(conf: Mapping[str, str]) -> int | None:
    key = "spark.kubernetes.appKillPodDeletionGracePeriod"
    grace = conf.get(key)
    try:
        return int(grace) if grace is not None else None
    except ValueError:
        raise SparkConfError(key, grace, "whole seconds") from None


def _kill_or_status(arguments: SubmitArguments, client: KubeClient, out: TextIO) -> int:
    from airflow_provider_sparkk8s.application.task.task_identity import ref_of_pod
    from airflow_provider_sparkk8s.monitoring.reducer import reduce_application
    from airflow_provider_sparkk8s.services.pods.driver_pods import DriverPods

    conf = arguments.spark_conf
    namespace = conf.get("spark.kubernetes.namespace", "default")
    glob = arguments.submission_glob or ""
    pods = DriverPods(client)
    if arguments.action == "kill":
        killed = pods.kill(glob, namespace, _grace_seconds(conf))
        for submission_id in killed:
            print(f"Deleting driver pod {submission_id}.", file=out)
        if not killed:
            print(_not_found(glob), file=out)
        return EXIT_OK if killed else EXIT_FAILED
    drivers = pods.find(glob, namespace)
    for pod in drivers:
        name = pod["metadata"]["name"]
        state = reduce_application([pod], driver_pod_name=name)
        ref = ref_of_pod(pod)  # an operator's driver says which task instance it serves
        owner = f" (task instance {ref.describe()})" if ref else ""
        print(f"{pod['metadata']['namespace']}:{name} {state.describe()}{owner}", file=out)
    if not drivers:
        print(_not_found(glob), file=out)
    return EXIT_OK if drivers else EXIT_FAILED


ClientFactory = Callable[[Mapping[str, str], Mapping[str, str]], "KubeClient"]


def run(
    argv: Sequence[str],
    *,
    environ: Mapping[str, str] | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
    client_factory: ClientFactory = _client,
) -> Outcome:
    """The whole command, with its I/O passed in (tests call this; `main` wraps it)."""
    out = out or sys.stdout
    err = err or sys.stderr
    # What spark-submit's wrapper exports (spark-env.sh) is the submitter's environment.
    environ = hidden(wrapper_environment(os.environ if environ is None else environ, err))
    arguments = submission.parse(submission.SubmissionRequest(argv, environ, os.getcwd()))
    line = choose_spark_line(
        arguments.spark_version,
        driver_image(dict(arguments.spark_conf)),
        how_to_set="--spark-version X.Y.Z",
    )
    if arguments.action == "help":
        print(USAGE.format(version=DEFAULT_SPARK_VERSION), file=out)
        return Outcome(EXIT_OK)
    if arguments.action == "version":
        print(f"sparkk8s-submit (builds the objects of Spark {line.version})", file=out)
        return Outcome(EXIT_OK)
    if arguments.verbose:
        _verbose(arguments, err)
    _warn_before_sending(arguments, line, environ, err)
    if arguments.action in ("kill", "status"):
        _grace_seconds(arguments.spark_conf)  # bad input fails before any client exists
        with client_factory(arguments.spark_conf, environ) as client:
            return Outcome(_kill_or_status(arguments, client, out))

    policy = read_policy(arguments, environ)
    planned = submission.plan(arguments, spark_version=line.version, environ=environ, policy=policy)
    if arguments.dry_run:
        _print_dry_run(planned, out, err)
        return Outcome(EXIT_OK)
    return _submit_and_wait(arguments, planned, environ, err, client_factory)


def _warn_before_sending(
    arguments: SubmitArguments, line: SparkLine, environ: Mapping[str, str], err: TextIO
) -> None:
    """The guessed Spark line (a submission's only), and a KUBECONFIG naming no file."""
    if line.warning and arguments.action == "submit":
        print(f"sparkk8s-submit: warning: {line.warning}", file=err)
    from airflow_provider_sparkk8s.kube.kubeconfig import unloadable_kubeconfig

    missing = unloadable_kubeconfig(environ)
    if missing and not arguments.dry_run:  # as kubectl warns "Config not found"
        print(
            f"sparkk8s-submit: warning: KUBECONFIG names {', '.join(missing)}: no such file; "
            "only the Spark conf says how to reach the API server",
            file=err,
        )


def _print_dry_run(planned: submission.Planned, out: TextIO, err: TextIO) -> None:
    """--dry-run: warnings, the policy's changes and the uploads on stderr; the objects'
    YAML (secrets masked) on stdout, so it can be piped."""
    preview = submission.dry_run(planned)  # secrets masked
    for warning in planned.conf_key_warnings:
        print(f"sparkk8s-submit: warning: {warning}", file=err)
    if preview.policy:
        print(preview.policy, file=err)
    for upload in preview.uploads:
        print(f"Would upload {upload.source} to {upload.target}", file=err)
    out.write(preview.yaml)


def _submit_and_wait(
    arguments: SubmitArguments,
    planned: submission.Planned,
    environ: Mapping[str, str],
    err: TextIO,
    client_factory: ClientFactory,
) -> Outcome:
    """Send the submission; then, unless waitAppCompletion is false, follow the driver to
    its end, reporting its status every interval, as spark-submit does."""
    from airflow_provider_sparkk8s.submission.kueue import queue_timeout_seconds

    wait = get_bool(arguments.spark_conf, WAIT_KEY, True)
    queue_timeout = queue_timeout_seconds(planned.spark_conf)
    # spark-submit reads the interval only when it waits (a bad one is refused then).
    interval = report_interval_seconds(arguments.spark_conf) if wait else 1.0
    with client_factory(arguments.spark_conf, environ) as client:
        submitted_at = time.time()  # the queue timeout counts from here, uploads included
        result = submission.submit(client, planned, conf_storage, StderrLog(err))
        app_name = arguments.spark_conf.get("spark.app.name", "")
        _print(
            err,
            f"Deployed Spark application {app_name} with application ID {result.app_id} "
            f"and submission ID {result.submission_id} into Kubernetes",
        )
        if not wait:
            return Outcome(EXIT_OK)
        _print(err, f"Waiting for application {app_name} ({result.submission_id}) to finish...")
        with StatusReporter(err, result.app_id, interval) as reporter:
            state = wait_for_driver(
                client,
                result.namespace,
                result.driver_pod_name,
                err,
                seen=reporter.seen,
                application_id=result.app_id,
                queue_timeout=queue_timeout,
                submitted_at=submitted_at,
            )
    return _finished(err, f"{app_name} ({result.submission_id})", state)


def _finished(err: TextIO, application: str, state: ApplicationState) -> Outcome:
    """The end line, and a failure's kind (what the exit code says, in words)."""
    _print(err, f"Application {application} finished: {state.describe()}")
    from airflow_provider_sparkk8s.monitoring.failure_kind import failure_kind

    if state.state != "succeeded":
        _print(err, f"Failure kind: {failure_kind({**state.to_dict(), 'state': 'failed'})}")
    return Outcome(exit_code_of(state), state)


def exit_code_of(state: ApplicationState) -> int:
    """0 for success, else the exit code of the failure's kind (a vanished driver, state
    unknown, is infrastructure)."""
    from airflow_provider_sparkk8s.monitoring.failure_kind import failure_kind

    if state.state == "succeeded":
        return EXIT_OK
    return EXIT_CODES[failure_kind({**state.to_dict(), "state": "failed"})]


def main(argv: Sequence[str] | None = None) -> int:
    """The command (`argv` None: the process's own arguments; tests pass theirs)."""
    if argv is not None:
        return _main(argv)
    return end_process(_main(sys.argv[1:]))


def end_process(code: int) -> NoReturn:
    """Ends the command's process, its work done (every request answered, every thread but
    the daemons finished), its output flushed, without the interpreter's teardown: freeing
    every module and object the run made was about 5 ms of a 105 ms run
    (benchmarks/cli_phases.py, "exit"). Nothing of ours registers an atexit handler on this
    path; logging's runs here."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _main(argv: Sequence[str]) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        return run(argv).exit_code
    except SparkConfError as error:
        print(f"sparkk8s-submit: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KubeTLSVerificationError as error:  # configuration, not the cluster's state
        print(f"sparkk8s-submit: {error}", file=sys.stderr)
        return EXIT_FAILED
    except KubeConnectionError as error:
        print(f"sparkk8s-submit: {error}", file=sys.stderr)
        return EXIT_CODES["infrastructure"]
    except ApplicationFailed as error:
        print(f"sparkk8s-submit: {error}", file=sys.stderr)
        return EXIT_CODES.get(error.kind, EXIT_FAILED)
    except (KubeApiError, KubeConfigError, SparkK8sError) as error:
        print(f"sparkk8s-submit: {error}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
