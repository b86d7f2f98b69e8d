"""Spark's `Client.run`, once, for the operator and `sparkk8s-submit`.

`parse` (spark-submit's command line; the one clock read for `spark.app.submitTime`), then
`plan` (gather the local inputs, prepare, render, plan the uploads: bad input fails here,
naming its key and value, before any request), then either `dry_run` (the objects as YAML
with secrets redacted, and the files it would upload) or `submit` (upload, send the request
sequence of `services.submit.send`, which rolls back its objects on failure; a failed send removes
the uploads too). A caller adds only what is its own: the command line (the operator writes
one from its parameters), conf amendments (the operator's task identity), the Spark line,
where the upload credentials come from, and where messages go (a task log, or stderr).

Upload storage, one rule: `storage_for(upload path, the rendered submission's properties)`.
Those properties (the driver's spark.properties) are the conf spark-submit's uploader
configures Hadoop's file system from (`KubernetesUtils.uploadFileUri` takes the driver's
resolved conf), after every default and amendment; the caller only says whose credentials
(`Storage.from_spark_conf` for the CLI, the upload-storage hook for the operator).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import field

from airflow_provider_sparkk8s import objects
from airflow_provider_sparkk8s.errors import KubeApiError, SubmissionError
from airflow_provider_sparkk8s.records import record
from airflow_provider_sparkk8s.submission.command_line.arguments import (
    SubmitArguments,
    parse_spark_submit,
    read_text_file,
)
from airflow_provider_sparkk8s.submission.command_line.jar_manifest import read_jar
from airflow_provider_sparkk8s.submission.command_line.local_globs import list_local_files
from airflow_provider_sparkk8s.submission.upload_plan import (
    Upload,
    UploadPlan,
    local_upload_path_warning,
    plan_uploads,
)

# Parsing is all every command line needs (--help, --version, --kill and --status end
# there); the render, the feature steps, the client and what only some submissions need (a
# policy, a dry run, uploads, a 409 to adopt) are imported by the step that uses them:
# sparkk8s-submit's start-up is most of its wall time. Nor is typing imported (2 ms).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Protocol

    from airflow_provider_sparkk8s.application.policy.platform_policy import Policy
    from airflow_provider_sparkk8s.kube.sync_client import KubeClient
    from airflow_provider_sparkk8s.monitoring.reducer import Pod
    from airflow_provider_sparkk8s.services.pods.driver_pods import DriverPods
    from airflow_provider_sparkk8s.services.submit.uploader import Storage
    from airflow_provider_sparkk8s.submission.naming import SubmissionIds
    from airflow_provider_sparkk8s.submission.render import RenderedSubmission
    from airflow_provider_sparkk8s.submission.spec import KubeObject

    class Log(Protocol):
        """Where the service's messages go: a `logging.Logger` (the task log) or the CLI's."""

        def info(self, msg: str, /, *args: Any) -> object: ...

        def warning(self, msg: str, /, *args: Any) -> object: ...


# (upload path, the rendered submission's properties) -> where the uploads are written.
StorageFor = Callable[[str | None, Mapping[str, str]], "Storage"]


def now_ms() -> int:
    return time.time_ns() // 1_000_000


@record
class SubmissionRequest:
    """A spark-submit command line (`--master` included) and where it runs."""

    argv: Sequence[str]
    # The process environment: connections and tokens may be in it, so it is never shown.
    environ: Mapping[str, str] = field(repr=False)
    cwd: str  # relative paths of the command line point here
    # Set beside the command line by the operator (`--spark-version` and the conf's image
    # win): the release whose checks apply.
    spark_version: str | None = None
    image: str | None = None


@record
class Planned:
    """One submission, rendered, with its uploads planned; nothing written or sent yet."""

    rendered: RenderedSubmission
    uploads: UploadPlan
    spark_conf: Mapping[str, str]  # as prepared: what the redaction regex is read from
    # Conf keys that look like typos of the keys this Spark line defines (never refused).
    conf_key_warnings: tuple[str, ...] = ()
    policy: Policy | None = None  # the platform policy it was checked against and kept
    # What the driver's storage client will likely refuse (never refused here).
    storage_warnings: tuple[str, ...] = ()


@record
class DryRun:
    objects: tuple[KubeObject, ...]  # every object, secrets redacted
    yaml: str  # the same objects as one YAML stream
    uploads: tuple[Upload, ...]  # what a submission would upload, nothing was
    policy: str | None = None  # "Policy from <source>: every rule kept (...)", if one applies


@record
class Submitted:
    """The driver a submission left running: its own, or, after a 409, the live one another
    submitter created first under the same pod name (`adopted`)."""

    app_id: str
    namespace: str
    driver_pod_name: str
    submission_id: str  # "<namespace>:<driver pod>"
    created: tuple[str, ...] = ()  # "<Kind>/<name>" of every object sent, in order
    uploaded_dirs: tuple[str, ...] = ()  # removed with the driver when it goes
    adopted: Pod | None = None


def parse(request: SubmissionRequest, clock_ms: Callable[[], int] = now_ms) -> SubmitArguments:
    """spark-submit's command line, parsed as spark-submit parses it (local files and jar
    manifests read, globs expanded)."""
    return parse_spark_submit(
        request.argv,
        environ=request.environ,
        read_text=read_text_file,
        submit_time_ms=clock_ms(),
        cwd=request.cwd,
        list_files=list_local_files,
        read_jar=read_jar,
        spark_version=request.spark_version,
        image=request.image,
    )


def plan(
    arguments: SubmitArguments,
    *,
    spark_version: str,
    environ: Mapping[str, str],
    ids: SubmissionIds | None = None,
    spark_conf: Mapping[str, str] | None = None,
    driver_pod_template: Mapping[str, Any] | None = None,
    executor_pod_template: Mapping[str, Any] | None = None,
    policy: Policy | None = None,
    provided: Mapping[str, str] | None = None,
) -> Planned:
    """IMPURE (reads local files, draws random ids unless given): every object of the
    submission and the local files to upload before it. `spark_conf` replaces the parsed
    conf (the operator's, amended with its task identity).

    With a platform `policy`, its pins fill the conf first and every rule is checked on
    what was rendered (`application.policy.guardrails`): a broken rule raises `PolicyViolation`
    here, before any upload or request. `provided`: the keys the caller wrote itself, which
    denied keys do not apply to."""
    from airflow_provider_sparkk8s.services.submit import local_inputs
    from airflow_provider_sparkk8s.submission.conf_typos import typo_warnings
    from airflow_provider_sparkk8s.submission.naming import new_submission_ids
    from airflow_provider_sparkk8s.submission.render import prepare, render

    conf = arguments.spark_conf if spark_conf is None else spark_conf
    if policy is not None:
        from airflow_provider_sparkk8s.application.policy import guardrails

        conf = guardrails.apply_pins(policy, conf, spark_version)
    driver_conf = prepare(
        conf,
        spark_version=spark_version,
        main_app_resource=arguments.main_app_resource,
        main_class=arguments.main_class,
        app_args=arguments.app_args,
        proxy_user=arguments.proxy_user,
        local=local_inputs.gather(conf, environ),
        ids=ids or new_submission_ids(),
        driver_pod_template=driver_pod_template,
        executor_pod_template=executor_pod_template,
    )
    rendered = render(driver_conf)
    if policy is not None:
        guardrails.enforce(policy, driver_conf, rendered, provided)
    uploads = plan_uploads(driver_conf)
    return Planned(
        rendered,
        uploads,
        driver_conf.spark_conf,
        tuple(typo_warnings(conf, spark_version)),
        policy,
        _storage_warnings(uploads, driver_conf.spark_conf, spark_version),
    )


def _storage_warnings(
    uploads: UploadPlan, spark_conf: Mapping[str, str], spark_version: str
) -> tuple[str, ...]:
    """What the upload path's store will do that its user should hear of first (a region,
    a connector, plain HTTP, a JVM kept alive); nothing when nothing is uploaded."""
    if not uploads.uploads:
        return ()
    from airflow_provider_sparkk8s.submission.abfs_warnings import (
        abfs_exit_warning,
        abfs_plain_http_warning,
    )
    from airflow_provider_sparkk8s.submission.storage_options import (
        gcs_connector_warning,
        s3a_region_warning,
    )

    checks = (s3a_region_warning, gcs_connector_warning, abfs_plain_http_warning, abfs_exit_warning)
    found = (check(uploads.upload_path, spark_conf, spark_version) for check in checks)
    return tuple(warning for warning in found if warning)


def dry_run(planned: Planned) -> DryRun:
    """What `submit` would send, secrets masked as Spark masks conf it prints (a dry run's
    output ends up in terminals, task logs and CI logs)."""
    from airflow_provider_sparkk8s.application.policy.redaction import (
        redact_objects,
        redaction_pattern,
    )
    from airflow_provider_sparkk8s.submission.render import to_yaml

    redacted = redact_objects(planned.rendered.objects, redaction_pattern(planned.spark_conf))
    policy = planned.policy
    verdict = None
    if policy is not None:
        rules = ", ".join(policy.rules()) or "no rules"
        verdict = f"Policy from {policy.source}: every rule kept ({rules})"
    return DryRun(tuple(redacted), to_yaml(redacted), planned.uploads.uploads, verdict)


def submit(
    client: KubeClient,
    planned: Planned,
    storage_for: StorageFor,
    log: Log,
    *,
    adopt_conflict: bool = False,
) -> Submitted:
    """Upload every local file, then send every object; all or nothing.

    With `adopt_conflict`, a 409 on the driver pod whose holder is live (another worker
    submitted the same task instance first) returns that pod as `adopted`."""
    from airflow_provider_sparkk8s.services.submit import send
    from airflow_provider_sparkk8s.services.submit.uploader import upload_all

    rendered = planned.rendered
    for warning in _warnings_before_sending(planned):
        log.warning("%s", warning)
    storage = storage_for(planned.uploads.upload_path, rendered.system_properties)

    def uploaded_one(upload: Upload) -> None:
        log.info("Uploaded %s to %s", upload.source, upload.target)

    # Every upload happens before the first request that creates anything.
    uploaded = upload_all(planned.uploads, storage, on_upload=uploaded_one)
    try:
        result = send.submit(client, rendered)
    except BaseException as error:
        for left in uploaded.remove():
            log.warning("Could not remove uploaded folder %s", left)
        if adopt_conflict and _is_pod_conflict(error):
            from airflow_provider_sparkk8s.services.pods.driver_pods import DriverPods

            return _adopt_after_conflict(DriverPods(client), rendered, error, log)
        raise
    return Submitted(
        app_id=result.app_id,
        namespace=result.namespace,
        driver_pod_name=result.driver_pod_name,
        submission_id=result.submission_id,
        created=result.created,
        uploaded_dirs=tuple(uploaded.directories),
    )


def _warnings_before_sending(planned: Planned) -> list[str]:
    """Everything a submission warns of before its first upload or request, in the order it
    always said them: conf key typos, the upload store's, secret confs left in the clear, a
    local upload path the driver cannot see."""
    from airflow_provider_sparkk8s.submission import secret_confs

    rendered = planned.rendered
    warnings = [*planned.conf_key_warnings, *planned.storage_warnings]
    in_clear = secret_confs.in_clear_warning(
        rendered.secret_confs_in_clear,
        secret_confs.enabled(planned.spark_conf),
        rendered.conf_map_name,
        rendered.namespace,
    )
    if in_clear:
        warnings.append(in_clear)
    if planned.uploads.uploads:  # the warning about a local upload path needs tempfile
        import tempfile

        mount = local_upload_path_warning(
            planned.uploads, rendered.driver_pod, tempfile.gettempdir()
        )
        if mount:
            warnings.append(mount)
    return warnings


def _is_pod_conflict(error: BaseException) -> bool:
    cause = error.__cause__
    return (
        isinstance(error, SubmissionError)
        and isinstance(cause, KubeApiError)
        and cause.status == 409
    )


def _adopt_after_conflict(
    pods: DriverPods, rendered: RenderedSubmission, error: BaseException, log: Log
) -> Submitted:
    """Another submitter created this submission's pod first: follow theirs, if it runs."""
    pod = pods.get(rendered.namespace, rendered.driver_pod_name)
    if pod is None:
        raise error from None  # gone again already; let the caller retry
    from airflow_provider_sparkk8s.monitoring.reducer import is_live

    if not is_live(pod):
        raise SubmissionError(
            f"driver pod {rendered.namespace}:{rendered.driver_pod_name} already exists "
            "and has finished; delete it, or drop spark.kubernetes.driver.pod.name from "
            "conf so each submission gets its own name"
        ) from error
    log.info("Another worker submitted %s first", rendered.driver_pod_name)
    return Submitted(
        app_id=objects.application_id(pod) or "",
        namespace=rendered.namespace,
        driver_pod_name=rendered.driver_pod_name,
        submission_id=rendered.submission_id,
        adopted=pod,
    )
