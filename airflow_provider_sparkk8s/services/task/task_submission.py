"""One task instance's submission: adopt its live driver, or submit the next one.

The operator's part around the submission service (`services.submit.submission`): the task
identity goes into the conf of every submission (`submission_conf`: labels, a pod name per
submission number), `reattach.decide` chooses between adopting and submitting, an adopted
driver is marked with the adopting try (`ownership`, so an older try's kill spares it), a
new submission waits until the drivers being deleted are gone, and an adopted driver's
uploads are read back from its spark.properties so they go with it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from airflow_provider_sparkk8s import objects
from airflow_provider_sparkk8s.application.following.tracked import (
    TrackedApplication,
    tracked_from_pod,
)
from airflow_provider_sparkk8s.application.metrics.provider_metrics import (
    NO_METRICS,
    MetricsSink,
    send,
    submit_latency,
    task_tags,
)
from airflow_provider_sparkk8s.application.policy.platform_policy import Policy
from airflow_provider_sparkk8s.application.task.ownership import needs_claim
from airflow_provider_sparkk8s.application.task.reattach import SubmitNew, decide
from airflow_provider_sparkk8s.application.task.submission_plan import (
    KubernetesParameters,
    operator_keys,
    submission_conf,
)
from airflow_provider_sparkk8s.application.task.task_identity import TaskInstanceRef
from airflow_provider_sparkk8s.errors import KubeApiError, SubmissionError
from airflow_provider_sparkk8s.monitoring.reducer import (
    DRIVER_CONTAINER,
    Pod,
    reduce_application,
)
from airflow_provider_sparkk8s.records import record
from airflow_provider_sparkk8s.services.pods.driver_pods import DriverPods
from airflow_provider_sparkk8s.services.submit import submission
from airflow_provider_sparkk8s.services.submit.driver_removal import (
    RemoveUploads,
    delete_driver,
    read_uploads,
)
from airflow_provider_sparkk8s.submission.command_line.arguments import SubmitArguments
from airflow_provider_sparkk8s.submission.kueue import queue_timeout_seconds
from airflow_provider_sparkk8s.submission.naming import SubmissionIds

if TYPE_CHECKING:
    from airflow_provider_sparkk8s.services.submit.submission import Log

# How long a new submission waits for the drivers being deleted to go, past their grace
# period: the kubelet confirms a stopped pod within seconds; much longer means a lost node.
GONE_MARGIN_SECONDS = 60
DEFAULT_GRACE_SECONDS = 30
# An adoption's mark is refused when the pod changed since it was listed (its status moves
# a few times in a driver's life): list and decide again, this many times.
DECIDE_ATTEMPTS = 5


@record
class TaskSubmission:
    """What every submission of one task instance shares; `plan(n)` renders number n."""

    ref: TaskInstanceRef
    arguments: SubmitArguments
    kubernetes: KubernetesParameters
    spark_version: str
    # The process environment: connections and tokens may be in it, so it is never shown.
    environ: Mapping[str, str] = field(repr=False)
    ids: SubmissionIds
    driver_pod_template: Mapping[str, Any] | None = None
    executor_pod_template: Mapping[str, Any] | None = None
    policy: Policy | None = None  # the platform's (connection or [sparkk8s] policy)

    def plan(self, number: int) -> submission.Planned:
        labels = self.policy.labels if self.policy else None
        parsed = self.arguments.spark_conf
        conf = submission_conf(parsed, self.kubernetes, self.ref, number, labels)
        return submission.plan(
            self.arguments,
            spark_version=self.spark_version,
            environ=self.environ,
            ids=self.ids,
            spark_conf=conf,
            driver_pod_template=self.driver_pod_template,
            executor_pod_template=self.executor_pod_template,
            policy=self.policy,
            provided=operator_keys(conf, parsed),
        )


def adopt_or_submit(
    pods: DriverPods,
    task: TaskSubmission,
    first: submission.Planned,
    list_drivers: Callable[[], Sequence[Pod]],
    *,
    reattach: bool,
    storage_for: submission.StorageFor,
    log: Log,
    remove_uploads: RemoveUploads | None = None,
    metrics: MetricsSink = NO_METRICS,
) -> TrackedApplication:
    """Adopt the task instance's live driver, or submit the next number. `first` is number
    1, rendered before any request so bad input has failed already; `list_drivers`: every
    driver pod the task instance submitted so far, listed in `first`'s namespace. A live
    driver deleted here takes its uploads along (`remove_uploads`). A new driver's submit
    latency goes to `metrics`."""
    namespace = first.rendered.namespace
    ref = task.ref
    for _ in range(DECIDE_ATTEMPTS):
        drivers = list_drivers()
        decision = decide(
            drivers,
            reattach=reattach,
            clear_number=ref.clear_number,
            try_number=ref.try_number,
        )
        if isinstance(decision, SubmitNew):
            break
        pod = decision.pod
        if needs_claim(pod, ref.try_number):
            claimed = _claim(pods, pod, ref.try_number, log)
            if claimed is None:  # changed since listed (being deleted?): decide again
                continue
            pod = claimed
        for extra in decision.extra_live_pods:
            log.warning("Deleting a second live driver of this task instance: %s", extra)
            delete_driver(pods, namespace, extra, remove_uploads=remove_uploads, log=log)
        return adopt(pod, decision.state, log, pods)
    else:
        raise SubmissionError(
            f"The driver pods of {ref.describe()} kept changing while try {ref.try_number} "
            f"decided whether to adopt one ({DECIDE_ATTEMPTS} attempts); nothing was submitted"
        )
    _clear_the_way(pods, namespace, decision, drivers, log, remove_uploads)
    planned = first if decision.submission == 1 else task.plan(decision.submission)
    return _submit(pods, planned, ref, storage_for, log, metrics)


def _submit(
    pods: DriverPods,
    planned: submission.Planned,
    ref: TaskInstanceRef,
    storage_for: submission.StorageFor,
    log: Log,
    metrics: MetricsSink,
) -> TrackedApplication:
    """Send `planned`; a driver another worker created first (409) is adopted instead."""
    submitted_at = datetime.now(UTC).isoformat()
    started = time.monotonic()
    sent = submission.submit(pods.client, planned, storage_for, log, adopt_conflict=True)
    if sent.adopted is not None:
        state = reduce_application([sent.adopted], driver_pod_name=sent.driver_pod_name).state
        return adopt(sent.adopted, state, log)
    if metrics.enabled:
        tags = task_tags(sent.namespace, ref.dag_id, ref.task_id)
        send(metrics, (submit_latency(time.monotonic() - started),), tags)
    for created in sent.created:
        log.info("Created %s in namespace %s", created, sent.namespace)
    log.info("Submitted Spark application %s (submission id %s)", sent.app_id, sent.submission_id)
    containers = planned.rendered.driver_pod["spec"]["containers"]
    return TrackedApplication(
        application_id=sent.app_id,
        namespace=sent.namespace,
        driver_pod=sent.driver_pod_name,
        driver_container=containers[-1].get("name") or DRIVER_CONTAINER,
        submitted_at=submitted_at,
        uploaded_dirs=sent.uploaded_dirs,
        queue_timeout=queue_timeout_seconds(planned.spark_conf),
    )


def _claim(pods: DriverPods, pod: Pod, try_number: int, log: Log) -> Pod | None:
    """The adopted pod marked as this try's; without `patch` on pods (a Role older than
    docs/rbac.yaml's), adopt it unmarked, as before, and say what that risks."""
    try:
        return pods.claim(pod, try_number)
    except KubeApiError as error:
        if error.status != 403:
            raise
        log.warning(
            "Adopting driver pod %s without marking it as try %s's (%s): grant `patch` on "
            "pods (docs/rbac.yaml), else a late kill of an older try may delete it",
            objects.name(pod),
            try_number,
            error,
        )
        return dict(pod)


def _clear_the_way(
    pods: DriverPods,
    namespace: str,
    decision: SubmitNew,
    drivers: Sequence[Pod],
    log: Log,
    remove_uploads: RemoveUploads | None,
) -> None:
    """Delete the live drivers the decision replaces, then wait until every driver being
    deleted is gone: one task instance, one driver at a time."""
    for stale in decision.superseded_pods:
        log.info(
            "Deleting driver pod %s: it was submitted before the DAG run was cleared, and a "
            "cleared task runs afresh",
            stale,
        )
        delete_driver(pods, namespace, stale, remove_uploads=remove_uploads, log=log)
    for stale in decision.live_pods_to_delete:
        log.info("reattach_on_restart is off: deleting live driver %s", stale)
        delete_driver(pods, namespace, stale, remove_uploads=remove_uploads, log=log)
    if not decision.wait_for_gone:
        return
    timeout = GONE_MARGIN_SECONDS + max(
        (_grace_seconds(p) for p in drivers if objects.name(p) in decision.wait_for_gone),
        default=DEFAULT_GRACE_SECONDS,
    )
    log.info(
        "Waiting up to %ss for driver pod %s to be gone before submitting again",
        timeout,
        ", ".join(decision.wait_for_gone),
    )
    left = pods.wait_gone(namespace, decision.wait_for_gone, timeout)
    if left:
        raise SubmissionError(
            f"Driver pod {', '.join(left)} in namespace {namespace} is still being deleted "
            f"after {timeout}s; not submitting a second driver beside it (its node may be "
            "lost: once the pod is gone, a retry submits)"
        )


def _grace_seconds(pod: Pod) -> int:
    """The pod's grace period: the one its deletion set, else its spec's, else Kubernetes'."""
    given = (pod.get("metadata") or {}).get("deletionGracePeriodSeconds")
    if given is None:
        given = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
    return int(given) if isinstance(given, int) else DEFAULT_GRACE_SECONDS


def adopt(pod: Pod, state: str, log: Log, pods: DriverPods | None = None) -> TrackedApplication:
    """Follow `pod` instead of submitting; with `pods`, its uploads go with it too."""
    app = tracked_from_pod(pod, adopted=True)
    log.info(
        "Adopting driver pod %s of application %s (%s) instead of submitting again",
        app.submission_id,
        app.application_id,
        state,
    )
    if pods is None:
        return app
    return replace(app, uploaded_dirs=uploads_of(pods, pod, log))


def uploads_of(pods: DriverPods, pod: Pod, log: Log) -> tuple[str, ...]:
    """The upload folders an adopted driver points at (its spark.properties and its main
    resource say)."""
    return read_uploads(pods, pod, log).dirs
