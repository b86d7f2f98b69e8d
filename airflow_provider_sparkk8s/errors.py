"""One exception family for the whole provider.

Every message names what was wrong (the key and the value) and what would be
accepted, so a user can fix the input without reading our code.
"""

from __future__ import annotations


class SparkK8sError(Exception):
    """Base of every error this provider raises on purpose."""


class SparkConfError(SparkK8sError, ValueError):
    """Invalid input: a conf key, an argument or a file. Raised before any API request."""

    def __init__(self, key: str, value: object, accepted: str, hint: str | None = None):
        self.key = key
        self.value = value
        self.accepted = accepted
        # No value: say what is missing, not "=None".
        message = (
            f"{key} is not set: expected {accepted}"
            if value is None
            else f"{key}={value!r} is invalid: expected {accepted}"
        )
        if hint:
            message += f" ({hint})"
        super().__init__(message)


class KubeConfigError(SparkK8sError):
    """The connection or kubeconfig cannot produce a working client (never holds secrets)."""


class CredentialCommandRefused(KubeConfigError):
    """A connection would run a command (a kubeconfig `exec:` credential plugin) in a process
    that must run no connection's code: the api-server, the scheduler, the dag processor."""

    def __init__(self, conn_id: str, command: str, where: str, option: str) -> None:
        self.conn_id, self.command, self.where, self.option = conn_id, command, where, option
        super().__init__(
            f"connection {conn_id!r} authenticates with an exec credential plugin "
            f"({command!r}), and {where} runs no command taken from a connection: anyone "
            "who can edit connections could run code there. Give this connection a token, a "
            "token file or client certificates, or let the deployment allow it with "
            f"[sparkk8s] {option} = True"
        )


class KubeApiError(SparkK8sError):
    """The API server refused a request; names the object, the status and its reason."""

    def __init__(
        self,
        status: int,
        reason: str,
        message: str,
        *,
        method: str = "",
        path: str = "",
        body: dict[str, object] | None = None,
        missing_permission: str = "",
    ):
        self.status = status
        self.reason = reason
        self.api_message = message
        # A 403's missing permission as RBAC named it ("create configmaps in ..."), or "".
        self.missing_permission = missing_permission
        self.method = method
        self.path = path
        self.body = body or {}
        super().__init__(f"{method} {path} failed: {status} {reason}: {message}".strip())


class KubeConnectionError(SparkK8sError):
    """The API server could not be reached or its TLS identity could not be verified."""


class KubeTLSVerificationError(KubeConnectionError):
    """The API server's certificate was refused (wrong CA, server name): a configuration
    error, which no retry mends."""


class SubmissionError(SparkK8sError):
    """A submission failed half-way; what was created has been removed."""


class ConnectServerUnavailable(SparkK8sError):
    """A client found its Spark Connect server ended or not serving; the message names the
    driver pod and why (application/connect/server_rules.readiness)."""


class ApplicationFailed(SparkK8sError):
    """The Spark application ended in failure; the message carries the driver's reason.

    The base of the typed outcomes below (catch it to catch them all). Each carries what the
    reducer knew: the driver pod, the pod's reason, the exit code and the last exception
    line; `kind` is the name the XCom's `reason` field, the task log and the CLI use.
    """

    kind = "failed"  # not classified (a driver that could not be found on resume)

    def __init__(
        self,
        message: str,
        *,
        pod: str | None = None,
        reason: str | None = None,
        exit_code: int | None = None,
        exception_line: str | None = None,
        memory_raised: bool = False,
    ):
        self.pod = pod
        self.reason = reason
        self.exit_code = exit_code
        self.exception_line = exception_line
        # This try already ran with the larger driver memory of an out-of-memory retry.
        self.memory_raised = memory_raised
        super().__init__(message)


class ApplicationError(ApplicationFailed):
    """The application itself failed: the driver exited non-zero with Spark's exit exception
    or the user's exit code. Running it again runs the same code on the same input."""

    kind = "application_error"


class DriverOutOfMemory(ApplicationFailed):
    """The driver ran out of memory: its container was OOMKilled, or it exited with Spark's
    out-of-memory exit code (52) or a `java.lang.OutOfMemoryError`."""

    kind = "out_of_memory"


class ConfigurationError(ApplicationFailed):
    """What the submission names does not exist, so no try can start the driver: its image,
    which the registry answered "not found" for (reason `ImageNotFound`; the message names
    the image and the registry's answer). Not retried; unlike `SparkConfError`, found only
    once the cluster tried."""

    kind = "configuration_error"


class InfrastructureFailure(ApplicationFailed):
    """The cluster, not the application: the driver was evicted, preempted, deleted by
    someone else, lost with its node, never pulled its image (for a reason other than its
    absence) or never scheduled within its startup timeout, or the API server could not be
    reached."""

    kind = "infrastructure"


class ApplicationTimedOut(ApplicationFailed):
    """The application ran longer than its `run_timeout`."""

    kind = "timeout"


FAILURE_CLASSES: dict[str, type[ApplicationFailed]] = {
    cls.kind: cls
    for cls in (
        ApplicationFailed,
        ApplicationError,
        ConfigurationError,
        DriverOutOfMemory,
        InfrastructureFailure,
        ApplicationTimedOut,
    )
}
# The outcomes no retry mends: the same code, or the same missing image, fails the same way.
NOT_RETRIED: tuple[type[ApplicationFailed], ...] = (ApplicationError, ConfigurationError)


class PolicyViolation(SparkConfError):
    """The platform team's policy refuses the submission (bad input: never retried).

    `violations` holds every broken rule as (key, shown value, rule); values of secret-looking
    keys are already redacted."""

    def __init__(self, source: str, violations: list[tuple[str, str, str]]):
        key, value, rule = violations[0]
        lines = "; ".join(f"{k}={v!r} breaks {r}" for k, v, r in violations)
        SparkK8sError.__init__(
            self, f"the platform policy from {source} refuses this submission: {lines}"
        )
        self.key, self.value, self.accepted = key, value, rule
        self.source = source
        self.violations = violations
