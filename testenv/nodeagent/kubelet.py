"""The kubelet's bookkeeping: the Node and its Lease, the pods bound to the node (one worker
thread each, as the kubelet's pod workers), their status, their hosts files and the logs
endpoint. Running a container is `runtime.py`'s job; deciding what to write is the pure
modules' job.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import logging
import signal
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testenv.admin_client import AdminHttp, AdminHttpError
from testenv.nodeagent.api_forward import TcpForward
from testenv.nodeagent.env import (
    ContainerConfigError,
    PodFacts,
    expand,
    object_data,
    referenced_objects,
    resolve_env,
)
from testenv.nodeagent.hosts import PodAddress, hosts_file, service_addresses
from testenv.nodeagent.images import Image, container_command
from testenv.nodeagent.informer import Informer
from testenv.nodeagent.log_server import KubeletServer, LogSource
from testenv.nodeagent.logs import rfc3339
from testenv.nodeagent.node import LEASE_NAMESPACE, lease_object, node_object, node_status
from testenv.nodeagent.runtime import ContainerProcess, PodDirs, ProcessRuntime
from testenv.nodeagent.status import (
    ContainerState,
    PodView,
    Running,
    Terminated,
    Waiting,
    pod_status,
    terminated_reason,
    termination_message,
)
from testenv.nodeagent.volumes import (
    Mount,
    VolumeNotReady,
    VolumePlan,
    plan_mounts,
    plan_volumes,
    token_requests,
)

log = logging.getLogger(__name__)
LEASE_RENEW_SECONDS = 10.0
NODE_STATUS_SECONDS = 60.0
RETRY_MAX_SECONDS = 5.0
DEFAULT_GRACE_SECONDS = 30
STRATEGIC_MERGE = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"


@dataclass(frozen=True)
class AgentConfig:
    node_name: str
    node_ip: str  # the kubelet endpoint's address and every pod's hostIP
    kubelet_port: int
    api_service_ip: str  # where `kubernetes.default.svc:443` is forwarded from
    api_server: tuple[str, int]
    kubeconfig: Path
    state_dir: Path
    serving_cert: Path
    serving_key: Path
    pod_ip_prefix: str  # "127.a.b.": pods get .10 to .254
    capacity: Mapping[str, str]
    images_file: Path | None = None

    @classmethod
    def from_json(cls, text: str) -> AgentConfig:
        data = json.loads(text)
        for key in ("kubeconfig", "state_dir", "serving_cert", "serving_key", "images_file"):
            if data.get(key):
                data[key] = Path(data[key])
        data["api_server"] = tuple(data["api_server"])
        return cls(**data)

    def to_json(self) -> str:
        data = {k: str(v) if isinstance(v, Path) else v for k, v in self.__dict__.items()}
        data["capacity"] = dict(self.capacity)
        return json.dumps(data, indent=2)


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _micro(moment: datetime.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class AddressPool:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self._free = list(range(10, 255))
        self._lock = threading.Lock()

    def allocate(self) -> str:
        with self._lock:
            if not self._free:
                raise RuntimeError(f"no free pod address left in {self.prefix}0/24")
            return f"{self.prefix}{self._free.pop(0)}"

    def release(self, address: str) -> None:
        if address.startswith(self.prefix):
            with self._lock:
                self._free.append(int(address.rsplit(".", 1)[1]))


@dataclass
class PreparedContainer:
    spec: Mapping[str, Any]
    image: Image
    env: dict[str, str]
    argv: list[str]
    mounts: list[Mount]


@dataclass
class Prepared:
    dirs: PodDirs
    volumes: dict[str, VolumePlan]
    init_containers: list[PreparedContainer] = field(default_factory=list)
    containers: list[PreparedContainer] = field(default_factory=list)


class PodNotReady(Exception):
    """Preparation must be tried again; `state` is what the containers wait with meanwhile."""

    def __init__(self, state: Waiting) -> None:
        super().__init__(state.message or state.reason)
        self.state = state


class PodWorker:
    """One pod from binding to removal (restartPolicy Never: containers run once)."""

    def __init__(self, kubelet: Kubelet, pod: dict[str, Any]) -> None:
        self.kubelet = kubelet
        self.pod = pod
        metadata = pod["metadata"]
        self.uid: str = metadata["uid"]
        self.namespace: str = metadata.get("namespace") or "default"
        self.name: str = metadata["name"]
        self.changed = threading.Event()
        self.gone_from_api = False
        self.ip: str | None = None
        self.start_time = rfc3339(_now())
        self.states: dict[str, ContainerState] = {}
        self.init_states: dict[str, ContainerState] = {}
        self.processes: dict[str, ContainerProcess] = {}
        self.collected: set[str] = set()  # containers whose end is in the status
        self.last_sent: dict[str, Any] | None = None
        self.thread = threading.Thread(target=self.run, name=f"pod {self.name}", daemon=True)

    # -- events from the informer --

    def update(self, pod: dict[str, Any]) -> None:
        self.pod = pod
        self.changed.set()

    def gone(self) -> None:
        self.gone_from_api = True
        self.changed.set()

    @property
    def terminating(self) -> bool:
        return self.gone_from_api or bool(self.pod["metadata"].get("deletionTimestamp"))

    @property
    def spec(self) -> Mapping[str, Any]:
        return self.pod.get("spec") or {}

    @property
    def hostname(self) -> str:
        return str(self.spec.get("hostname") or self.name)

    def address(self) -> PodAddress | None:
        if self.ip is None:
            return None
        labels = self.pod["metadata"].get("labels") or {}
        live = any(isinstance(s, Running) for s in self.states.values())
        return PodAddress(self.namespace, labels, self.ip, ready=live and not self.terminating)

    # -- the lifecycle --

    def run(self) -> None:
        try:
            self._lifecycle()
        except Exception:
            log.exception("pod %s/%s: worker failed", self.namespace, self.name)
        finally:
            self._teardown()

    def _lifecycle(self) -> None:
        host_network = bool(self.spec.get("hostNetwork"))
        self.ip = self.kubelet.config.node_ip if host_network else self.kubelet.addresses.allocate()
        creating = "PodInitializing" if self.spec.get("initContainers") else "ContainerCreating"
        self.init_states = {c["name"]: Waiting("PodInitializing") for c in self._init_specs()}
        self.states = {c["name"]: Waiting(creating) for c in self._specs()}
        self.sync()
        prepared = self._prepare_until_ready()
        if prepared is not None:
            self._run_containers(prepared)
        while not self.terminating:  # ended: the pod object stays until someone deletes it
            self.changed.wait(30)
            self.changed.clear()
        self._finish()

    def _init_specs(self) -> list[Mapping[str, Any]]:
        return list(self.spec.get("initContainers") or [])

    def _specs(self) -> list[Mapping[str, Any]]:
        return list(self.spec.get("containers") or [])

    def _prepare_until_ready(self) -> Prepared | None:
        delay = 0.25
        while not self.terminating:
            try:
                return self._prepare()
            except PodNotReady as not_ready:
                for name in self.states:
                    self.states[name] = not_ready.state
                log.info("pod %s/%s: %s", self.namespace, self.name, not_ready)
            except AdminHttpError as error:
                log.info(
                    "pod %s/%s: API error while preparing: %s", self.namespace, self.name, error
                )
            self.sync()
            self.changed.wait(delay)
            self.changed.clear()
            delay = min(delay * 2, RETRY_MAX_SECONDS)
        return None

    def _prepare(self) -> Prepared:
        kubelet = self.kubelet
        assert self.ip is not None
        facts = PodFacts(self.pod, self.ip, kubelet.config.node_ip, kubelet.config.capacity)
        images = {}
        for spec in [*self._init_specs(), *self._specs()]:
            image = kubelet.images.get(spec.get("image", ""))
            if image is None:
                reason = "ImagePullBackOff" if self._pulled_before(spec["name"]) else "ErrImagePull"
                known = ", ".join(sorted(kubelet.images))
                raise PodNotReady(
                    Waiting(
                        reason, f'image "{spec.get("image")}" is not known here (known: {known})'
                    )
                )
            images[spec["name"]] = image
        objects = kubelet.fetch_objects(self.namespace, referenced_objects(self.pod))
        tokens = kubelet.request_tokens(self.pod)
        try:
            volume_list = plan_volumes(self.pod, facts, objects, tokens)
        except VolumeNotReady as error:
            raise PodNotReady(Waiting(self.states_reason(), str(error))) from error
        volumes = {v.name: v for v in volume_list}
        dirs = kubelet.runtime.prepare_pod(self.uid, volume_list, kubelet.hosts_for(self))
        prepared = Prepared(dirs, volumes)
        for spec in [*self._init_specs(), *self._specs()]:
            image = images[spec["name"]]
            try:
                env = {
                    **image.env,
                    "HOSTNAME": self.hostname,
                    **resolve_env(spec, facts, objects, kubelet.service_env()),
                }
                argv = [expand(arg, env) for arg in container_command(spec, image)]
                mounts = plan_mounts(spec, volumes)
            except (ContainerConfigError, ValueError) as error:
                raise PodNotReady(Waiting("CreateContainerConfigError", str(error))) from error
            target = prepared.init_containers if spec in self._init_specs() else prepared.containers
            target.append(PreparedContainer(spec, image, env, argv, mounts))
        return prepared

    def states_reason(self) -> str:
        return "PodInitializing" if self.spec.get("initContainers") else "ContainerCreating"

    def _pulled_before(self, name: str) -> bool:
        state = self.states.get(name) or self.init_states.get(name)
        return isinstance(state, Waiting) and state.reason in ("ErrImagePull", "ImagePullBackOff")

    def _start(self, prepared: Prepared, container: PreparedContainer) -> ContainerProcess:
        process = self.kubelet.runtime.start_container(
            prepared.dirs,
            container.spec,
            container.image,
            container.env,
            container.argv,
            self.hostname,
            container.mounts,
            prepared.volumes,
        )
        self.processes[process.name] = process
        threading.Thread(target=self._wake_on_change, args=(process,), daemon=True).start()
        return process

    def _wake_on_change(self, process: ContainerProcess) -> None:
        """Wakes the worker when the container's command starts, and when it ends."""
        while not process.started.wait(0.5):
            if process.popen.poll() is not None:
                break
        self.changed.set()
        process.popen.wait()
        self.changed.set()

    def _run_containers(self, prepared: Prepared) -> None:
        for container in prepared.init_containers:
            process = self._start(prepared, container)
            if not self._wait_for_exits([process]):
                return
            ended = self.init_states[process.name]
            if not isinstance(ended, Terminated) or ended.exit_code != 0:
                for name in self.states:
                    self.states[name] = Waiting("PodInitializing")
                self.sync()
                return
        for name in self.states:
            self.states[name] = Waiting("ContainerCreating")
        processes = [self._start(prepared, c) for c in prepared.containers]
        self.sync()
        self._wait_for_exits(processes)
        self.kubelet.hosts_changed()

    def _wait_for_exits(self, processes: list[ContainerProcess]) -> bool:
        """Until every process ended (True), or the pod is deleted (its containers are then
        stopped; False)."""
        while True:
            self._observe(processes)
            if all(p.name in self.collected for p in processes):
                return True
            if self.terminating:
                self._stop(processes)
                return False
            self.changed.wait(5)
            self.changed.clear()

    def _set_state(self, name: str, state: ContainerState) -> None:
        target = self.init_states if name in self.init_states else self.states
        target[name] = state

    def _observe(self, processes: list[ContainerProcess]) -> None:
        """Moves each container to Running once its command started, and to Terminated once
        it ended (reason `StartError` if it ended before its command ran)."""
        changed = False
        for process in processes:
            if process.name in self.collected:
                continue
            code = process.exit_status()
            if code is None:
                if process.started.is_set() and not isinstance(
                    {**self.init_states, **self.states}.get(process.name), Running
                ):
                    self._set_state(process.name, Running(rfc3339(process.started_at)))
                    self.kubelet.hosts_changed()
                    changed = True
                continue
            spec = next(
                c for c in [*self._init_specs(), *self._specs()] if c["name"] == process.name
            )
            started = process.started.is_set()
            state = Terminated(
                exit_code=code,
                reason=terminated_reason(code, process.oom_killed()) if started else "StartError",
                started_at=rfc3339(process.started_at),
                finished_at=rfc3339(process.finished_at or _now()),
                message=termination_message(
                    spec if started else {"terminationMessagePolicy": "FallbackToLogsOnError"},
                    code,
                    process.termination_text(),
                    process.log_entries(),
                ),
            )
            self._set_state(process.name, state)
            self.collected.add(process.name)
            self.kubelet.runtime.cleanup(process)
            log.info(
                "pod %s/%s: container %s exited %d (%s)",
                self.namespace, self.name, process.name, code, state.reason,
            )  # fmt: skip
            changed = True
        if changed:
            self.sync()

    def _grace_seconds(self) -> float:
        metadata, spec = self.pod["metadata"], self.spec
        grace = metadata.get("deletionGracePeriodSeconds")
        if grace is None:
            grace = spec.get("terminationGracePeriodSeconds", DEFAULT_GRACE_SECONDS)
        return 0.0 if self.gone_from_api else float(grace)

    def _wait(self, until: Callable[[], bool], deadline: float) -> None:
        while not until() and time.monotonic() < deadline:
            self.changed.wait(0.1)
            self.changed.clear()

    def _stop(self, processes: list[ContainerProcess]) -> None:
        """SIGTERM, the grace period, then SIGKILL, as a kubelet stops a deleted pod. A
        container still being set up gets its SIGTERM once its command runs."""
        running = [p for p in processes if p.popen.poll() is None]
        if running:
            grace = self._grace_seconds()
            log.info("pod %s/%s: stopping (grace %.0fs)", self.namespace, self.name, grace)
            deadline = time.monotonic() + grace
            self._wait(lambda: all(p.started.is_set() or p.popen.poll() is not None
                                   for p in running), deadline)  # fmt: skip
            for process in running:
                self.kubelet.runtime.signal(process, signal.SIGTERM)
            self._wait(lambda: all(p.popen.poll() is not None for p in running), deadline)
            for process in running:
                if process.popen.poll() is None:
                    self.kubelet.runtime.kill(process)
                    process.popen.wait()
        self._observe(processes)

    def _finish(self) -> None:
        """The pod is deleted: its containers are stopped; remove the object for good."""
        self._stop(list(self.processes.values()))
        for name, state in list(self.states.items()):
            if isinstance(state, Waiting):
                now = rfc3339(_now())
                self.states[name] = Terminated(137, "ContainerStatusUnknown", now, now)
        if not self.gone_from_api:
            self.sync()
            self.kubelet.delete_pod(self.pod)

    def _teardown(self) -> None:
        for process in self.processes.values():
            self.kubelet.runtime.cleanup(process)
        if self.ip and self.ip != self.kubelet.config.node_ip:
            self.kubelet.addresses.release(self.ip)
        self.kubelet.runtime.remove_pod(self.uid)
        self.kubelet.forget(self)

    # -- status --

    def view(self) -> PodView:
        return PodView(
            pod_ip=self.ip or "",
            host_ip=self.kubelet.config.node_ip,
            start_time=self.start_time,
            init_containers=dict(self.init_states),
            containers=dict(self.states),
            container_ids={n: f"{self.uid}-{n}-{p.pid}" for n, p in self.processes.items()},
        )

    def sync(self) -> None:
        if self.gone_from_api:
            return
        base = {**self.pod, "status": self.last_sent or self.pod.get("status") or {}}
        status = pod_status(base, self.view(), rfc3339(_now()))
        if status == self.last_sent:
            return
        path = f"/api/v1/namespaces/{self.namespace}/pods/{self.name}/status"
        try:
            self.kubelet.client.request(
                "PATCH", path, content=json.dumps({"status": status}), content_type=STRATEGIC_MERGE
            )
            self.last_sent = status
        except AdminHttpError as error:
            if error.status == 404:
                self.gone()
            else:
                log.warning("pod %s/%s: status update failed: %s", self.namespace, self.name, error)

    def log_source(self, container: str) -> LogSource | str:
        names = [c["name"] for c in [*self._init_specs(), *self._specs()]]
        if container not in names:
            return f'container "{container}" in pod "{self.name}" is not valid'
        process = self.processes.get(container)
        state = self.states.get(container) or self.init_states.get(container)
        if process is None:
            reason = state.reason if isinstance(state, Waiting) else "ContainerCreating"
            return LogSource(None, lambda: False, reason)
        return LogSource(process.log_path, lambda: process.popen.poll() is None)


class Kubelet:
    def __init__(
        self,
        config: AgentConfig,
        client: AdminHttp,
        runtime: ProcessRuntime,
        images: Mapping[str, Image],
    ) -> None:
        self.config = config
        self.client = client
        self.runtime = runtime
        self.images = dict(images)
        self.addresses = AddressPool(config.pod_ip_prefix)
        self.stop_event = threading.Event()
        self.workers: dict[str, PodWorker] = {}
        self.finished: set[str] = set()  # uids whose worker is done: late events are ignored
        self._lock = threading.Lock()
        self._hosts_dirty = threading.Event()
        self.services: Informer | None = None
        self.pods: Informer | None = None
        self.server: KubeletServer | None = None
        self.forward: TcpForward | None = None
        self.node_uid = ""

    # -- start and stop --

    def start(self) -> None:
        self.forward = TcpForward((self.config.api_service_ip, 443), self.config.api_server).start()
        self.server = KubeletServer(
            (self.config.node_ip, self.config.kubelet_port),
            self.config.serving_cert,
            self.config.serving_key,
            self.lookup_log,
        ).start()
        self.register_node()
        self.renew_lease()
        for target, name in ((self._heartbeat, "heartbeat"), (self._hosts_loop, "hosts")):
            threading.Thread(target=target, name=name, daemon=True).start()
        self.services = Informer(
            self.client, "/api/v1/services", self._on_service, stop=self.stop_event
        ).start()
        self.services.synced.wait(30)
        self.pods = Informer(
            self.client,
            "/api/v1/pods",
            self._on_pod,
            {"fieldSelector": f"spec.nodeName={self.config.node_name}"},
            stop=self.stop_event,
        ).start()

    def stop(self) -> None:
        """Every container is killed at once (the plane goes with the agent)."""
        self.stop_event.set()
        with self._lock:
            workers = list(self.workers.values())
        for worker in workers:
            for process in worker.processes.values():
                self.runtime.kill(process)
        for worker in workers:
            worker.gone()
            worker.thread.join(timeout=10)
        if self.server is not None:
            self.server.close()
        if self.forward is not None:
            self.forward.close()
        self.runtime.close()

    # -- the node --

    def register_node(self) -> None:
        node = node_object(
            self.config.node_name,
            self.config.node_ip,
            self.config.kubelet_port,
            self.config.capacity,
        )
        try:
            created = self.client.request("POST", "/api/v1/nodes", json=node)
        except AdminHttpError as error:
            if error.status != 409:
                raise
            created = self.client.request("GET", f"/api/v1/nodes/{self.config.node_name}")
        self.node_uid = created["metadata"]["uid"]
        self.update_node_status()

    def update_node_status(self) -> None:
        status = node_status(
            self.config.node_ip,
            self.config.kubelet_port,
            self.config.capacity,
            self.config.node_name,
            rfc3339(_now()),
        )
        self.client.request(
            "PATCH",
            f"/api/v1/nodes/{self.config.node_name}/status",
            content=json.dumps({"status": status}),
            content_type=STRATEGIC_MERGE,
        )

    def renew_lease(self) -> None:
        name = self.config.node_name
        path = f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NAMESPACE}/leases"
        lease = lease_object(name, self.node_uid, _micro(_now()))
        try:
            self.client.request(
                "PATCH", f"{path}/{name}", content=json.dumps({"spec": lease["spec"]}),
                content_type=MERGE,
            )  # fmt: skip
        except AdminHttpError as error:
            if error.status != 404:
                raise
            self.client.request("POST", path, json=lease)

    def _heartbeat(self) -> None:
        last_status = _now()
        while not self.stop_event.wait(LEASE_RENEW_SECONDS):
            try:
                self.renew_lease()
                if (_now() - last_status).total_seconds() >= NODE_STATUS_SECONDS:
                    self.update_node_status()
                    last_status = _now()
            except Exception as error:  # noqa: BLE001 - the next beat tries again
                log.warning("heartbeat failed: %s", error)

    # -- pods --

    def _on_pod(self, kind: str, pod: dict[str, Any]) -> None:
        uid = pod["metadata"]["uid"]
        with self._lock:
            worker = self.workers.get(uid)
            if uid in self.finished:
                return
            if worker is None and kind != "DELETED" and not self.stop_event.is_set():
                worker = PodWorker(self, pod)
                self.workers[uid] = worker
                worker.thread.start()
                return
        if worker is None:
            return
        if kind == "DELETED":
            worker.gone()
        else:
            worker.update(pod)
        self.hosts_changed()

    def forget(self, worker: PodWorker) -> None:
        with self._lock:
            self.workers.pop(worker.uid, None)
            self.finished.add(worker.uid)
        self.hosts_changed()

    def delete_pod(self, pod: Mapping[str, Any]) -> None:
        metadata = pod["metadata"]
        path = f"/api/v1/namespaces/{metadata['namespace']}/pods/{metadata['name']}"
        body = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "gracePeriodSeconds": 0,
            "preconditions": {"uid": metadata["uid"]},
        }
        try:
            self.client.request("DELETE", path, json=body)
        except AdminHttpError as error:
            if error.status not in (404, 409):
                raise

    def fetch_objects(
        self, namespace: str, keys: set[tuple[str, str]]
    ) -> dict[tuple[str, str], dict[str, bytes] | None]:
        objects: dict[tuple[str, str], dict[str, bytes] | None] = {}
        for kind, name in sorted(keys):
            plural = "configmaps" if kind == "ConfigMap" else "secrets"
            try:
                found = self.client.request(
                    "GET", f"/api/v1/namespaces/{namespace}/{plural}/{name}"
                )
                objects[(kind, name)] = object_data(kind, found)
            except AdminHttpError as error:
                # 403: the node authorizer learns of the pod's references a moment after
                # the pod is bound; both mean "not there yet" to a kubelet.
                if error.status not in (403, 404):
                    raise
                objects[(kind, name)] = None
        return objects

    def request_tokens(self, pod: Mapping[str, Any]) -> dict[tuple[str, str], str]:
        metadata, spec = pod["metadata"], pod.get("spec") or {}
        account = spec.get("serviceAccountName") or "default"
        tokens = {}
        for request in token_requests(pod):
            body: dict[str, Any] = {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenRequest",
                "spec": {
                    "expirationSeconds": request.expiration_seconds,
                    "boundObjectRef": {
                        "apiVersion": "v1", "kind": "Pod",
                        "name": metadata["name"], "uid": metadata["uid"],
                    },
                },
            }  # fmt: skip
            if request.audience:
                body["spec"]["audiences"] = [request.audience]
            path = f"/api/v1/namespaces/{metadata['namespace']}/serviceaccounts/{account}/token"
            try:
                answer = self.client.request("POST", path, json=body)
            except AdminHttpError as error:
                if error.status not in (403, 404):
                    raise
                raise PodNotReady(
                    Waiting("ContainerCreating", f"token for service account {account}: {error}")
                ) from error
            tokens[(request.volume, request.path)] = answer["status"]["token"]
        return tokens

    def service_env(self) -> dict[str, str]:
        ip = self.config.api_service_ip
        return {
            "KUBERNETES_SERVICE_HOST": ip,
            "KUBERNETES_SERVICE_PORT": "443",
            "KUBERNETES_SERVICE_PORT_HTTPS": "443",
            "KUBERNETES_PORT": f"tcp://{ip}:443",
            "KUBERNETES_PORT_443_TCP": f"tcp://{ip}:443",
            "KUBERNETES_PORT_443_TCP_PROTO": "tcp",
            "KUBERNETES_PORT_443_TCP_PORT": "443",
            "KUBERNETES_PORT_443_TCP_ADDR": ip,
        }

    # -- hosts files --

    def _on_service(self, kind: str, service: dict[str, Any]) -> None:
        self.hosts_changed()

    def hosts_changed(self) -> None:
        self._hosts_dirty.set()

    def hosts_for(self, worker: PodWorker) -> str:
        with self._lock:
            workers = list(self.workers.values())
        addresses = [a for w in workers if (a := w.address()) is not None]
        services = self.services.snapshot() if self.services else []
        assert worker.ip is not None
        return hosts_file(
            worker.hostname,
            worker.ip,
            worker.namespace,
            service_addresses(services, addresses, self.config.api_service_ip),
        )

    def _hosts_loop(self) -> None:
        while not self.stop_event.is_set():
            self._hosts_dirty.wait(5)
            self._hosts_dirty.clear()
            with self._lock:
                workers = [w for w in self.workers.values() if w.ip is not None]
            for worker in workers:
                dirs = self.runtime.pod_dirs(worker.uid)
                if dirs.hosts.exists():
                    with contextlib.suppress(OSError):  # the pod went meanwhile
                        self.runtime.write_hosts(dirs, self.hosts_for(worker))

    # -- logs --

    def lookup_log(self, namespace: str, pod: str, container: str) -> LogSource | str:
        with self._lock:
            worker = next(
                (w for w in self.workers.values() if (w.namespace, w.name) == (namespace, pod)),
                None,
            )
        if worker is None:
            return f'pod "{pod}" in namespace "{namespace}" is not on this node'
        return worker.log_source(container)
