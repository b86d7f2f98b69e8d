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
    ):
        self.status = status
        self.reason = reason
        self.api_message = message
        self.method = method
        self.path = path
        self.body = body or {}
        super().__init__(f"{method} {path} failed: {status} {reason}: {message}".strip())


class KubeConnectionError(SparkK8sError):
    """The API server could not be reached or its TLS identity could not be verified."""


class SubmissionError(SparkK8sError):
    """A submission failed half-way; what was created has been removed."""


class ApplicationFailed(SparkK8sError):
    """The Spark application ended in failure; the message carries the driver's reason."""


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
