"""When and how long to wait before trying a request again.

Retries: 429 (honouring Retry-After), 5xx and transport failures, with capped, jittered
exponential backoff and a bounded number of attempts. A request that is not idempotent
(POST, JSON/merge PATCH) is retried only when the server certainly did not act on it: the
connection was never made, or the server answered 429.
"""

from __future__ import annotations

from collections.abc import Callable

from airflow_provider_sparkk8s.kube.request import KubeRequest
from airflow_provider_sparkk8s.kube.transport import TransportFailure, tls_failure
from airflow_provider_sparkk8s.records import record

_RETRIABLE_STATUSES = frozenset({429, 500, 502, 503, 504})


@record
class RetryPolicy:
    attempts: int = 5  # total tries, including the first
    base_delay: float = 0.1  # seconds; doubles per attempt
    max_delay: float = 5.0
    max_retry_after: float = 30.0  # a server asking for longer than this is not waited for


def _uniform() -> float:
    # Imported here: a request that succeeds at once, as most of sparkk8s-submit's do,
    # never waits, and random costs its start-up about 1 ms.
    import random

    return random.random()


def backoff_delay(
    attempt: int, base: float, cap: float, rng: Callable[[], float] = _uniform
) -> float:
    """Seconds to wait after failure number `attempt` (from 1): exponential from `base`,
    capped at `cap`, half of it jittered, so many clients retrying at once spread out
    but still back off. Used by request retries and by watch reconnects alike."""
    ceiling = min(cap, base * float(2 ** max(attempt - 1, 0)))
    return ceiling / 2 + rng() * ceiling / 2


def retry_delay(
    policy: RetryPolicy,
    attempt: int,
    retry_after: str | None = None,
    rng: Callable[[], float] = _uniform,
) -> float:
    """Seconds before try `attempt + 1`: Retry-After if the server gave one (capped, with a
    little jitter), else `backoff_delay`."""
    if retry_after is not None:
        try:
            return min(max(float(retry_after), 0.0), policy.max_retry_after) + rng() * 0.05
        except ValueError:
            pass  # an HTTP date; rare for the API server, fall back to our own backoff
    return backoff_delay(attempt, policy.base_delay, policy.max_delay, rng)


def should_retry_status(request: KubeRequest, status: int) -> bool:
    if status == 429:
        return True  # the server refused before acting: safe even for POST
    return status in _RETRIABLE_STATUSES and request.idempotent


def should_retry_transport(request: KubeRequest, failure: TransportFailure) -> bool:
    if tls_failure(failure) is not None:
        return False  # a wrong CA or rejected certificate will not fix itself
    if not failure.sent:
        return True  # the request never left: safe even for POST
    return request.idempotent
