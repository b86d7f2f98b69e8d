"""Every permission the submitter's requests need in the applications' namespace: one table.

The requests are the services' (`send`: the submission and its roll-back; `pods` and
`async_pods`: follow, adopt, kill, log, clean up; `store`: the trigger's list-then-watch and
resyncs), made for the operator, the sensor, the trigger, `sparkk8s-submit` and the leftover
clean-up alike. This table is the one source of two things that must agree with it:
docs/rbac.yaml's `sparkk8s-submitter` Role grants exactly the `always` rows (a test compares
them), and the connection's Test button asks for every row (SelfSubjectAccessReview).
tests/services/cluster_access/test_permissions_controlplane.py records the services' requests on
their way to the real API server and checks each one's access (`kube.paths.access_of`) is a row
here; the real-Spark and end-to-end tests run as a submitter bound to the documented Role, and
tests/services/cluster_access/test_rbac_minimal_controlplane.py takes each verb of the Role away in
turn and writes docs/rbac.md's table of what then fails (none is unused).
"""

from __future__ import annotations

from airflow_provider_sparkk8s.kube.paths import Access
from airflow_provider_sparkk8s.records import record


@record
class Permission:
    """One RBAC permission, what uses it, and whether every submission needs it."""

    access: Access
    used_for: str
    needed_only_for: str = ""  # empty: every submission; else the feature that needs it

    @property
    def always(self) -> bool:
        return not self.needed_only_for


def _rows(
    resource: str, verbs: tuple[str, ...], used_for: str, group: str = "", **kwargs: str
) -> tuple[Permission, ...]:
    subresource = kwargs.pop("subresource", "")
    return tuple(
        Permission(Access(verb, resource, group, subresource), used_for, **kwargs) for verb in verbs
    )


_OWNED = ("create", "patch", "delete")  # server-side apply (create + patch), roll-back (delete)

SUBMITTER_PERMISSIONS: tuple[Permission, ...] = (
    *_rows("pods", ("create",), "the driver pod"),
    *_rows("pods", ("get",), "adopting a live driver, --status, following one driver"),
    *_rows("pods", ("list", "watch"), "following drivers, --kill by glob, the leftover clean-up"),
    *_rows("pods", ("delete",), "kill, timeouts, on_finish_action, the leftover clean-up"),
    *_rows("pods", ("patch",), "the adoption mark: the try that adopted a live driver"),
    *_rows("pods", ("get",), "the driver's log in the task log", subresource="log"),
    *_rows(
        "configmaps",
        _OWNED,
        "the driver's spark.properties ConfigMap; a succeeded application's result record",
    ),
    *_rows(
        "configmaps",
        ("get",),
        "adoption and clean-up read a driver's uploads from it; a later try, the result record",
    ),
    *_rows("services", _OWNED, "the driver's headless Service"),
    *_rows("secrets", _OWNED, "shipped API credentials; the secret confs Secret"),
    *_rows("networkpolicies", _OWNED, "the driver's NetworkPolicy", "networking.k8s.io"),
    *_rows(
        "persistentvolumeclaims",
        _OWNED,
        "the driver's claims",
        needed_only_for="OnDemand volume claims on the driver",
    ),
    *_rows(
        "podgroups",
        _OWNED,
        "the driver's PodGroup",
        "scheduling.volcano.sh",
        needed_only_for="the Volcano feature step",
    ),
    *_rows(
        "poddisruptionbudgets",
        _OWNED,
        "the driver's PodDisruptionBudget, applied owned by the driver pod, deleted on roll-back",
        "policy",
        needed_only_for=(
            "disruption protection (spark.kubernetes.sparkk8s.driver.disruptionBudget.enabled)"
        ),
    ),
    *_rows(
        "pods",
        ("get",),
        "the live Spark UI through Airflow's plugin (the api-server's requests)",
        subresource="proxy",
        needed_only_for="the Spark UI through Airflow (docs/spark_ui.md)",
    ),
    *_rows(
        "workloads",
        _OWNED,
        "the prebuilt Workload, applied before the driver pod, deleted on roll-back and kill",
        "kueue.x-k8s.io",
        needed_only_for="Kueue admission (spark.kubernetes.kueue.queueName)",
    ),
    *_rows(
        "workloads",
        ("get",),
        "a queued driver's Workload: Kueue's reason, the admission's time (queued_seconds)",
        "kueue.x-k8s.io",
        needed_only_for="Kueue admission (spark.kubernetes.kueue.queueName)",
    ),
    *_rows(
        "localqueues",
        ("get",),
        "the ClusterQueue a queued driver waits in (read once per application)",
        "kueue.x-k8s.io",
        needed_only_for="Kueue admission (spark.kubernetes.kueue.queueName)",
    ),
)

# What docs/rbac.yaml's submitter Role grants, and what the Test button requires.
REQUIRED_ACCESS: tuple[Access, ...] = tuple(p.access for p in SUBMITTER_PERMISSIONS if p.always)
# Asked too, reported without failing the test: only some applications need them.
CONDITIONAL_PERMISSIONS: tuple[Permission, ...] = tuple(
    p for p in SUBMITTER_PERMISSIONS if not p.always
)
# docs/rbac.yaml's own Role for Kueue admission (sparkk8s-submitter-kueue).
KUEUE_ACCESS: tuple[Access, ...] = tuple(
    p.access for p in SUBMITTER_PERMISSIONS if p.access.group == "kueue.x-k8s.io"
)
