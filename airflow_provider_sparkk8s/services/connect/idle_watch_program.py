"""The Connect server's idle watcher: a program the watcher container beside the driver runs
(`python3 -c <this file>`, standard library only), never imported by the provider's faces.

Every few seconds it reads the driver's status API (`/api/v1/applications/<id>/jobs` on the
pod's address) and tries the gRPC port: the server is up once both answer (the status API
answers first, before the Connect service has started), and active while a job runs or a
job newer than the last one seen appears (by job id: the status API keeps only the last
`spark.ui.retainedJobs`, so a count would stop growing). After
IDLE_TIMEOUT_SECONDS without activity, or MAX_LIFETIME_SECONDS after it started, it deletes
its own pod with the pod's service account (the driver's Role deletes pods), which takes the
executors, Service, ConfigMap and Secret with it. When the driver's status API stops answering
after it had answered, or the pod's status says the Spark container terminated (a server
that failed while starting), the driver has ended: the watcher exits, so the pod ends too
(with the driver's own reason) instead of running on with only the watcher in it.
"""

from __future__ import annotations

import json
import os
import socket
import ssl
import sys
import time
import urllib.request
from dataclasses import dataclass

ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
API = "https://kubernetes.default.svc"
POLL_SECONDS = 5.0
SPARK_CONTAINER = "spark-kubernetes-driver"
GONE_AFTER_FAILURES = 3  # consecutive failed reads after a good one: the driver has ended


@dataclass(frozen=True)
class Activity:
    """What the watcher remembers between looks (monotonic seconds)."""

    started: float
    last_active: float
    newest_job: int = -1
    answered: bool = False
    failures: int = 0


def observe(previous: Activity, now: float, jobs: list[dict] | None) -> Activity:
    """Pure: one look's jobs (None: the status API did not answer)."""
    if jobs is None:
        return Activity(
            previous.started, previous.last_active, previous.newest_job, previous.answered,
            previous.failures + 1,
        )  # fmt: skip
    running = any(job.get("status") == "RUNNING" for job in jobs)
    newest = max((int(job.get("jobId", -1)) for job in jobs), default=-1)
    active = running or newest > previous.newest_job
    last_active = now if active else previous.last_active
    return Activity(previous.started, last_active, max(newest, previous.newest_job), True, 0)


def verdict(activity: Activity, now: float, idle_timeout: float, max_lifetime: float) -> str | None:
    """Pure: why the server ends now ("idle", "lifetime", "driver gone"), or None."""
    if activity.answered and activity.failures >= GONE_AFTER_FAILURES:
        return "driver gone"
    if now - activity.started >= max_lifetime:
        return "lifetime"
    if activity.answered and now - activity.last_active >= idle_timeout:
        return "idle"
    return None


def _get_json(url: str) -> object:
    with urllib.request.urlopen(url, timeout=5) as answer:
        return json.loads(answer.read())


def _port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


def _jobs(base: str) -> list[dict] | None:
    try:
        applications = _get_json(f"{base}/api/v1/applications")
        if not isinstance(applications, list) or not applications:
            return None
        jobs = _get_json(f"{base}/api/v1/applications/{applications[0]['id']}/jobs")
        return jobs if isinstance(jobs, list) else None
    except (OSError, ValueError, KeyError):
        return None


def _own_pod(namespace: str, name: str, method: str = "GET") -> dict:
    with open(f"{ACCOUNT}/token") as token_file:
        token = token_file.read().strip()
    context = ssl.create_default_context(cafile=f"{ACCOUNT}/ca.crt")
    request = urllib.request.Request(
        f"{API}/api/v1/namespaces/{namespace}/pods/{name}",
        method=method,
        headers={"Authorization": f"Bearer {token}"},
    )
    with urllib.request.urlopen(request, context=context, timeout=10) as answer:
        return dict(json.loads(answer.read()))


def driver_terminated(pod: dict) -> bool:
    """Pure: the pod's status says the Spark container has terminated."""
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        if status.get("name") == SPARK_CONTAINER and (status.get("state") or {}).get("terminated"):
            return True
    return False


def _driver_has_ended(namespace: str, name: str) -> bool:
    try:
        return driver_terminated(_own_pod(namespace, name))
    except (OSError, ValueError):
        return False  # unknown: look again next time


def main() -> int:
    env = os.environ
    idle_timeout = float(env["IDLE_TIMEOUT_SECONDS"])
    max_lifetime = float(env["MAX_LIFETIME_SECONDS"])
    base = f"http://{env['POD_IP']}:{env.get('SPARK_UI_PORT', '4040')}"
    namespace, name = env["POD_NAMESPACE"], env["POD_NAME"]
    started = time.monotonic()
    activity = Activity(started, started)
    while True:
        now = time.monotonic()
        up = _port_open(env["POD_IP"], int(env.get("CONNECT_PORT", "15002")))
        jobs = _jobs(base) if up else None
        activity = observe(activity, now, jobs)
        why = verdict(activity, now, idle_timeout, max_lifetime)
        if jobs is None and why is None and _driver_has_ended(namespace, name):
            why = "driver gone"
        if why == "driver gone":
            print("the Spark container has ended: so does the watcher", flush=True)
            return 0
        if why is not None:
            print(f"ending the Connect server: {why} ({idle_timeout:.0f}s idle timeout, "
                  f"{max_lifetime:.0f}s lifetime)", flush=True)  # fmt: skip
            try:
                _own_pod(namespace, name, method="DELETE")
                return 0
            except OSError as error:
                # Tried again next round (a busy API server times out); activeDeadlineSeconds
                # still ends the pod if it never answers.
                print(f"could not delete the driver pod, trying again: {error}",
                      file=sys.stderr, flush=True)  # fmt: skip
        time.sleep(POLL_SECONDS)


if __name__ == "__main__":
    sys.exit(main())
