"""SparkK8sRetryPolicy: Airflow 3.3's retry policy (AIP-105) over the typed outcomes.

    SparkK8sSubmitOperator(..., retries=3, retry_policy=SparkK8sRetryPolicy(memory_factor=2))

- an application error (`ApplicationError`: the code failed) fails at once: running the same
  code on the same input again wastes the cluster;
- a configuration error (`ConfigurationError`: the driver's image does not exist in its
  registry) fails at once: another try pulls the same missing image;
- an infrastructure failure (`InfrastructureFailure`, or the API server out of reach) is
  retried, after `infrastructure_delay` (None: the task's `retry_delay`);
- out of memory (`DriverOutOfMemory`): with `memory_factor`, retried once with
  `spark.driver.memory` and `spark.driver.memoryOverhead` times the factor (the operator
  submits the larger sizes and its XCom records both); a raised try that runs out again
  fails. Without a factor the task's own retries apply;
- anything else (a run timeout, an unclassified failure, any other exception): the task's
  own retries, as without a policy.

A policy can fail a task early but never retries beyond `retries`. The operator uses this
policy when a task sets none (Airflow 3.3+); on 3.0-3.2, which have no policies, the
operator fails an application or configuration error with AirflowFailException instead.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from airflow_provider_sparkk8s.application.task.memory_retry import check_factor
from airflow_provider_sparkk8s.errors import (
    ApplicationError,
    ConfigurationError,
    DriverOutOfMemory,
    InfrastructureFailure,
    KubeConnectionError,
)
from airflow_provider_sparkk8s.version_compat import (
    AIRFLOW_VERSION,
    RETRY_POLICIES,
    ExceptionRetryPolicy,
    RetryAction,
    RetryDecision,
    RetryRule,
)

if not RETRY_POLICIES:
    raise ImportError(
        f"SparkK8sRetryPolicy needs Airflow 3.3 or later (retry policies); this is Airflow "
        f"{AIRFLOW_VERSION}, where the operator fails application errors without retries"
    )

REASON_MAX = 500  # what Airflow stores of a decision's reason
APPLICATION_REASON = "application error, not retried: the same code would fail the same way"
CONFIGURATION_REASON = (
    "configuration error, not retried: another try would meet the same missing image"
)
INFRASTRUCTURE_REASON = "infrastructure failure, retried"


def _with_failure(reason: str, exception: BaseException) -> str:
    return f"{reason} ({exception})"[:REASON_MAX]


class SparkK8sRetryPolicy(ExceptionRetryPolicy):
    """Fail application and configuration errors, retry infrastructure, optionally retry
    once with more driver memory after an out-of-memory failure."""

    def __init__(
        self,
        *,
        infrastructure_delay: timedelta | None = None,
        memory_factor: float | None = None,
    ) -> None:
        self.infrastructure_delay = infrastructure_delay
        self.memory_factor = check_factor(memory_factor)
        super().__init__(
            rules=[
                RetryRule(
                    exception=ApplicationError,
                    action=RetryAction.FAIL,
                    reason=APPLICATION_REASON,
                ),
                RetryRule(
                    exception=ConfigurationError,
                    action=RetryAction.FAIL,
                    reason=CONFIGURATION_REASON,
                ),
                RetryRule(
                    exception=[InfrastructureFailure, KubeConnectionError],
                    action=RetryAction.RETRY,
                    retry_delay=infrastructure_delay,
                    reason=INFRASTRUCTURE_REASON,
                ),
            ],
            default=RetryAction.DEFAULT,
        )

    def evaluate(
        self,
        exception: BaseException,
        try_number: int,
        max_tries: int,
        context: Any = None,
    ) -> RetryDecision:
        if isinstance(exception, DriverOutOfMemory):
            return self._out_of_memory(exception)
        decision = super().evaluate(exception, try_number, max_tries, context)
        if decision.action is RetryAction.DEFAULT:
            return decision
        return RetryDecision(
            action=decision.action,
            retry_delay=decision.retry_delay,
            reason=_with_failure(decision.reason or "", exception),
        )

    def _out_of_memory(self, exception: DriverOutOfMemory) -> RetryDecision:
        if self.memory_factor is None:
            return RetryDecision(
                action=RetryAction.DEFAULT,
                reason=_with_failure(
                    "driver out of memory; no memory_factor, the task's retries apply", exception
                ),
            )
        if exception.memory_raised:
            return RetryDecision.fail(
                _with_failure("driver out of memory again with the raised memory", exception)
            )
        return RetryDecision.retry(
            reason=_with_failure(
                f"driver out of memory, retried once with {self.memory_factor:g}x "
                "spark.driver.memory and spark.driver.memoryOverhead",
                exception,
            )
        )

    def serialize(self) -> dict[str, Any]:
        delay = self.infrastructure_delay
        return {
            "__type": "SparkK8sRetryPolicy",
            "infrastructure_delay": None if delay is None else delay.total_seconds(),
            "memory_factor": self.memory_factor,
        }

    @classmethod
    def deserialize(cls, data: dict[str, Any]) -> SparkK8sRetryPolicy:
        delay = data.get("infrastructure_delay")
        return cls(
            infrastructure_delay=None if delay is None else timedelta(seconds=delay),
            memory_factor=data.get("memory_factor"),
        )
