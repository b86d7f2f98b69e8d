"""The task run's first phase: the operator's parameters as one task instance's submission.

`prepare` turns the rendered parameters (`RunRequest`) into spark-submit's command line,
parses it once and chooses the Spark line once, from what spark-submit's front end read; the
conf is amended in one place (`amended_conf`) before that parser, and per submission number
after it (`TaskSubmission.plan`, then the policy's pins in `submission.plan`). `dry_run`
renders number 1 and logs it, sending nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field, replace
from typing import TYPE_CHECKING, Any

from airflow_provider_sparkk8s.application.policy.platform_policy import Policy
from airflow_provider_sparkk8s.application.task.memory_retry import DriverMemory, with_memory
from airflow_provider_sparkk8s.application.task.spark_submit_args import (
    SubmitParameters,
    spark_submit_argv,
)
from airflow_provider_sparkk8s.application.task.submission_plan import (
    KubernetesParameters,
    template_dict,
)
from airflow_provider_sparkk8s.application.task.task_identity import TaskInstanceRef
from airflow_provider_sparkk8s.application.ui import event_log
from airflow_provider_sparkk8s.application.ui.event_log import EventLogChoice
from airflow_provider_sparkk8s.application.ui.live_ui import with_proxy_base
from airflow_provider_sparkk8s.records import record
from airflow_provider_sparkk8s.services.submit import submission
from airflow_provider_sparkk8s.services.task.task_submission import TaskSubmission
from airflow_provider_sparkk8s.submission.naming import new_submission_ids
from airflow_provider_sparkk8s.submission.spark_line import choose_spark_line, driver_image

if TYPE_CHECKING:
    from airflow_provider_sparkk8s.services.submit.submission import Log

HOW_TO_SET_THE_LINE = 'spark_version="X.Y.Z" on the operator'


@record
class ConfAdditions:
    """What the operator adds to the author's conf (`amended_conf`): the event log the
    platform asks for, and the Spark UI's path under Airflow when the UI goes through it."""

    event_log: EventLogChoice = field(default_factory=EventLogChoice)
    ui_base: str | None = None


@record
class RunRequest:
    """What the operator hands over to prepare a submission, rendered: its
    SparkSubmitOperator parameters (`conf` with OpenLineage's keys), where the application
    goes, the Kubernetes parameters of its own, and its additions to the conf."""

    parameters: SubmitParameters
    master: str
    namespace: str
    cwd: str  # relative paths of the parameters point here (the DAG file's folder)
    # The process environment: connections and tokens may be in it, so it is never shown.
    environ: Mapping[str, str] = field(repr=False)
    image: str | None = None
    spark_version: str | None = None
    driver_pod_template: str | Mapping[str, Any] | None = None
    executor_pod_template: str | Mapping[str, Any] | None = None
    policy: Policy | None = None
    additions: ConfAdditions = field(default_factory=ConfAdditions)


def amended_conf(request: RunRequest) -> dict[str, Any]:
    """The author's conf (with OpenLineage's keys, which Airflow's helpers write in the
    face) and the operator's additions, in one place: the event log, then the UI's path; the
    author's own keys win over both. The rest comes after spark-submit's parser, once per
    submission: the Kubernetes keys and the identity (`TaskSubmission.plan`), then the
    policy's pins (`submission.plan`); what was submitted is read back from the record."""
    additions = request.additions
    conf = event_log.with_event_log(request.parameters.conf, additions.event_log)
    return conf if additions.ui_base is None else with_proxy_base(conf, additions.ui_base)


def prepare(
    request: RunRequest, ref: TaskInstanceRef, log: Log, memory: DriverMemory | None = None
) -> TaskSubmission:
    """The task's parameters as spark-submit's command line, parsed once (one clock for
    spark.app.submitTime), the Spark line chosen once, with what every submission of this
    task instance adds. `memory`: the out-of-memory retry's sizes, which win."""
    parameters = replace(request.parameters, conf=amended_conf(request))
    if memory is not None:
        parameters = with_memory(parameters, memory)
    arguments = submission.parse(
        submission.SubmissionRequest(
            argv=["--master", request.master, *spark_submit_argv(parameters)],
            environ=request.environ,
            cwd=request.cwd,
            spark_version=request.spark_version,
            image=request.image,
        )
    )
    # The release spark-submit's front end checked with: the same inputs, chosen once here.
    line = choose_spark_line(
        arguments.spark_version,
        driver_image(dict(arguments.spark_conf), request.image),
        how_to_set=HOW_TO_SET_THE_LINE,
    )
    if line.warning:
        log.warning("%s", line.warning)
    log.info("The objects follow %s", line.describe())
    return TaskSubmission(
        ref=ref,
        arguments=arguments,
        kubernetes=KubernetesParameters(
            namespace=request.namespace,
            image=request.image,
            driver_pod_template=request.driver_pod_template,
            executor_pod_template=request.executor_pod_template,
            spark_version=line.version,
        ),
        spark_version=line.version,
        environ=request.environ,
        ids=new_submission_ids(),
        driver_pod_template=template_dict("driver_pod_template", request.driver_pod_template),
        executor_pod_template=template_dict("executor_pod_template", request.executor_pod_template),
        policy=request.policy,
    )


def dry_run(request: RunRequest, ref: TaskInstanceRef, log: Log) -> dict[str, Any]:
    """Render and validate submission number 1, log every object as YAML (secrets
    redacted) and what would be uploaded; send nothing. The task's XCom says what it built."""
    task = prepare(request, ref, log)
    planned = task.plan(1)
    preview = submission.dry_run(planned)
    for warning in planned.conf_key_warnings:
        log.warning("%s", warning)
    if preview.policy:
        log.info("Dry run: %s", preview.policy)
    for upload in preview.uploads:
        log.info("Dry run: would upload %s to %s", upload.source, upload.target)
    rendered = planned.rendered
    log.info(
        "Dry run: %d objects of application %s, nothing sent:\n%s",
        len(preview.objects),
        rendered.app_id,
        preview.yaml,
    )
    return {
        "dry_run": True,
        "spark_version": task.spark_version,
        "application_id": rendered.app_id,
        "namespace": rendered.namespace,
        "driver_pod": rendered.driver_pod_name,
        "objects": [f"{o.get('kind')}/{o['metadata'].get('name')}" for o in preview.objects],
    }
