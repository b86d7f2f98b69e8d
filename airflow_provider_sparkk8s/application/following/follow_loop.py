"""The loop that drives the follower, written once: what to ask for next, never how.

Whoever follows an application (the operator's worker-side wait, the CLI, the trigger, the
sensor's pokes) repeats the same round: wait for a look at the pods, observe it, read the
Kueue Workload when one is due, check the deadlines. `follow_loop` is that round as a
generator: it yields what it needs (`WaitForLook`, `ReadQueue`) and what is worth telling
(`Looked`, `QueueNoted`), is sent the answers, and returns the step that ends the
application. A runner only answers: the sync one (`services.following.follow_runs`) from a watch in
a thread, the async one from the trigger's shared store, each in its own way of waiting.

Pure, as `follower`: the clock is handed in (read once per round, and only for a due
Workload read besides), and nothing here sends a request.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable
from typing import Any

from airflow_provider_sparkk8s.application.following import follower
from airflow_provider_sparkk8s.application.following.follower import Following, Step
from airflow_provider_sparkk8s.monitoring.reducer import ApplicationState, Pod
from airflow_provider_sparkk8s.records import record

# A look at the pods: as they are now, and the versions seen since the last look (a
# deletion's last version may be the first to show how a pod ended).
Seen = tuple[Iterable[Pod], Iterable[Pod]]


@record(slots=True)
class WaitForLook:
    """Answer with the next look, or None when `seconds_left` passed without one."""

    following: Following  # the memory so far (a face that shows the last state reads it)

    def seconds_left(self, now: float) -> float | None:
        """How long the wait may block before a deadline or a Workload read is due."""
        return follower.seconds_to_deadline(self.following, now)


@record(slots=True)
class ReadQueue:
    """Answer with the application's Workload as read now (None: it could not be read)."""

    namespace: str
    workload: str
    cluster_queue: str | None


@record(slots=True)
class Looked:
    """A look observed (no answer): `before` is the state of the look before it."""

    before: ApplicationState | None
    step: Step


@record(slots=True)
class QueueNoted:
    """A Workload read noted (no answer): its step's transition, if any, is worth a line."""

    step: Step


Need = WaitForLook | ReadQueue | Looked | QueueNoted
# Sent back: a `Seen` (or None) for `WaitForLook`, a `QueueView` (or None) for `ReadQueue`.
FollowLoop = Generator[Need, Any, Step]


def follow_loop(
    following: Following, clock: Callable[[], float], *, reads_queue: bool = True
) -> FollowLoop:
    """Rounds of look, observe, Workload, deadlines until the following ends; the step that
    ends it. The first round starts with a look: a follower that knows nothing yet (a
    restarted trigger) must not time out a driver it has not looked at. `reads_queue`
    False: a follower that cannot read the Workload (the CLI without an application id)."""
    while True:
        seen = yield WaitForLook(following)
        now = clock()  # one reading a round: the cost's intervals and the deadlines
        if seen is not None:
            pods, gone = seen
            before = following.state
            step = follower.observe(following, pods, gone, now=now)
            following = step.following
            yield Looked(before, step)
            if step.final is not None:
                return step
        if (
            reads_queue
            and following.kueue is not None
            and follower.queue_read_due(following, clock())
        ):
            spec = following.spec
            view = yield ReadQueue(
                spec.namespace, spec.application_id, follower.known_cluster_queue(following)
            )
            noted = follower.note_queue(following, view, clock())
            following = noted.following
            yield QueueNoted(noted)
        step = follower.tick(following, now)
        if step.final is not None:
            return step
        following = step.following
