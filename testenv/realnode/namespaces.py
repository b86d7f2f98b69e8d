"""The real node's namespaces: a network namespace and a private mount namespace, held by
one `unshare` process, that containerd, the kubelet and dnsmasq join with `nsenter` (not
`ip netns exec`, which remounts /sys and would hide the cgroup mounts).

Inside, made by `setup()`:
- a veth pair, both ends inside: the node IP on one, and a default route into it whose
  gateway nobody answers, so nothing can leave;
- one DNAT rule: the `kubernetes` Service's ClusterIP:443 -> the API forward (no kube-proxy);
- a tmpfs on /run and an overlay on /var/lib whose writes go to the instance's folder: the
  kubelet and containerd write a few fixed paths (/var/lib/kubelet/device-plugins,
  /var/lib/cni, /run/containerd, /run/netns) that two instances would otherwise share;
- a cgroup root of the instance's own in every cgroup v1 hierarchy.

`teardown()` kills every process left in the mount namespace or in the cgroup root (the
containers, the shims), by pid, removes the cgroups and ends the holder; the namespaces,
their mounts and links go with it.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from testenv.processes import ManagedProcess, wait_until
from testenv.realnode.config import (
    API_FORWARD_PORT,
    API_SERVICE_IP,
    DEAD_END,
    NODE_IP,
    NODE_PREFIX,
)

CGROUP_ROOT = Path("/sys/fs/cgroup")


def cgroup_hierarchies(*, unified: bool = False) -> list[Path]:
    """The cgroup v1 hierarchies mounted here, and with `unified` the (empty) cgroup2 one
    beside them too: the kubelet makes its tree there as well, so teardown looks there."""
    kinds = ("cgroup", "cgroup2") if unified else ("cgroup",)
    hierarchies = []
    with open("/proc/self/mounts") as mounts:
        for line in mounts:
            fields = line.split()
            if fields[2] in kinds and fields[1].startswith(str(CGROUP_ROOT)):
                hierarchies.append(Path(fields[1]))
    return sorted(hierarchies)


def registry() -> Path:
    """One file per running instance, naming its owner and what to sweep if it dies."""
    default = Path.home() / ".cache" / "sparkk8s-realnode" / "instances"
    return Path(os.environ.get("SPARKK8S_REALNODE_REGISTRY", default))


def _start_time(pid: int) -> str | None:
    """The process's start time (field 22 of /proc/PID/stat): a pid reused by another
    process has another one."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _pids_of(ids: set[str], cgroup_name: str, exe_under: Path | None = None) -> set[int]:
    """Processes in the namespaces `ids` ("net:[…]", "mnt:[…]") or in the cgroup root. With
    `exe_under`, a namespace counts only for programs from that folder: a dead namespace's
    number is reused by the next namespace made (another session's pod, say)."""
    pids: set[int] = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                held = {os.readlink(f"/proc/{entry}/ns/{kind}") for kind in ("mnt", "net")}
                if held & ids and (
                    exe_under is None
                    or Path(os.readlink(f"/proc/{entry}/exe")).is_relative_to(exe_under)
                ):
                    pids.add(int(entry))
    for hierarchy in cgroup_hierarchies(unified=True):
        root = hierarchy / cgroup_name
        if root.is_dir():
            for procs in root.rglob("cgroup.procs"):
                with contextlib.suppress(OSError, ValueError):
                    pids.update(int(line) for line in procs.read_text().split())
    return pids


def _kill_all(find: Callable[[], set[int]], deadline: float) -> None:
    end = time.monotonic() + deadline
    while (pids := find()) and time.monotonic() < end:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)


def _remove_cgroups(cgroup_name: str) -> None:
    for hierarchy in cgroup_hierarchies(unified=True):
        root = hierarchy / cgroup_name
        if not root.is_dir():
            continue
        # Deepest first: a cgroup goes only once its children have.
        for directory in sorted(
            (p for p in root.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)
        ):
            with contextlib.suppress(OSError):
                directory.rmdir()
        for _ in range(50):
            try:
                root.rmdir()
                break
            except OSError:
                time.sleep(0.1)


def sweep_stale() -> list[str]:
    """Removes what instances whose owner died left (a session SIGKILLed: its children die
    with it, but containerd's shims and the containers live on in the namespaces): kills
    their processes by pid, removes their cgroups and folders. Returns the swept names."""
    swept = []
    for path in sorted(registry().glob("*.json")):
        try:
            entry = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        pid, started = entry["owner"]
        if _start_time(pid) == started:
            continue  # its owner is alive: not ours to touch
        # Its namespaces may be gone and their numbers reused: by namespace, only its own
        # programs (the shims live on there); the containers are in its cgroup root.
        packages = Path(entry["packages"]) if "packages" in entry else None
        ids = set(entry["ids"]) if packages is not None else set()
        _kill_all(functools.partial(_pids_of, ids, entry["cgroup"], packages), 10.0)
        _remove_cgroups(entry["cgroup"])
        shutil.rmtree(entry["scratch"], ignore_errors=True)
        path.unlink(missing_ok=True)
        swept.append(str(entry["cgroup"]))
    return swept


class NodeNamespaces:
    def __init__(self, scratch: Path, packages: Path, cgroup_name: str) -> None:
        self.scratch = scratch
        self.packages = packages
        self.cgroup_name = cgroup_name  # e.g. sparkk8s-realnode-1a2b3c4d
        self._ids: set[str] = set()  # "net:[…]", "mnt:[…]": the namespaces, once made
        self.holder = ManagedProcess(
            "namespaces",
            ["unshare", "--net", "--mount", "--propagation", "private", "sleep", "infinity"],
            scratch / "namespaces.log",
        )

    @property
    def netns(self) -> str:
        return f"/proc/{self.holder.pid}/ns/net"

    @property
    def mntns(self) -> str:
        return f"/proc/{self.holder.pid}/ns/mnt"

    def enter(self) -> list[str]:
        """The argv prefix that runs a command inside both namespaces (nsenter execs it, so
        the pid recorded is the command's own)."""
        return ["nsenter", f"--net={self.netns}", f"--mount={self.mntns}", "--"]

    def tool_env(self) -> dict[str, str]:
        libs = self.packages / "usr/lib/x86_64-linux-gnu"
        return {
            "LD_LIBRARY_PATH": str(libs),
            "XTABLES_LIBDIR": str(libs / "xtables"),
            "PATH": f"{self.packages / 'usr/bin'}:{self.packages / 'usr/sbin'}:"
            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        }

    def run(self, *argv: str) -> None:
        completed = subprocess.run(
            [*self.enter(), "env", *(f"{k}={v}" for k, v in self.tool_env().items()), *argv],
            capture_output=True,
            text=True,
            check=False,
        )
        if completed.returncode != 0:
            raise RuntimeError(
                f"{' '.join(argv)} exited {completed.returncode} in the node's namespaces: "
                f"{completed.stderr.strip()}"
            )

    @property
    def _registration(self) -> Path:
        return registry() / f"{self.cgroup_name}.json"

    def _register(self) -> None:
        """Written before anything is made inside, so that a session killed outright (no
        teardown runs) is swept by the next node that starts (`sweep_stale`)."""
        registry().mkdir(parents=True, exist_ok=True)
        self._registration.write_text(
            json.dumps(
                {
                    "owner": [os.getpid(), _start_time(os.getpid())],
                    "ids": sorted(self._ids),
                    "cgroup": self.cgroup_name,
                    "scratch": str(self.scratch),
                    "packages": str(self.packages),
                }
            )
        )

    def start(self) -> None:
        sweep_stale()
        self.holder.start()
        own = os.readlink("/proc/self/ns/net")
        wait_until(
            lambda: os.readlink(self.netns) != own and os.readlink(self.mntns) != own,
            10,
            "unshare (the node's namespaces)",
            watch=[self.holder],
        )
        self._ids = {os.readlink(self.netns), os.readlink(self.mntns)}
        self._register()
        self._setup_network()
        self._setup_mounts()
        self._setup_cgroups()

    def _setup_network(self) -> None:
        run = self.run
        run("ip", "link", "set", "lo", "up")
        run("ip", "link", "add", "node0", "type", "veth", "peer", "name", "deadend0")
        run("ip", "addr", "add", f"{NODE_IP}/{NODE_PREFIX}", "dev", "node0")
        run("ip", "link", "set", "node0", "up")
        run("ip", "link", "set", "deadend0", "up")
        run("ip", "route", "add", "default", "via", DEAD_END, "dev", "node0")
        run(
            "xtables-nft-multi", "iptables", "-t", "nat", "-A", "PREROUTING",
            "-d", f"{API_SERVICE_IP}/32", "-p", "tcp", "--dport", "443",
            "-j", "DNAT", "--to-destination", f"{NODE_IP}:{API_FORWARD_PORT}",
        )  # fmt: skip

    def _setup_mounts(self) -> None:
        upper, work = self.scratch / "var-lib" / "upper", self.scratch / "var-lib" / "work"
        upper.mkdir(parents=True)
        work.mkdir(parents=True)
        self.run("mount", "-t", "tmpfs", "-o", "mode=755", "tmpfs", "/run")
        self.run(
            "mount", "-t", "overlay", "overlay",
            "-o", f"lowerdir=/var/lib,upperdir={upper},workdir={work}", "/var/lib",
        )  # fmt: skip

    def _setup_cgroups(self) -> None:
        for hierarchy in cgroup_hierarchies():
            path = hierarchy / self.cgroup_name
            path.mkdir(exist_ok=True)
            if hierarchy.name == "cpuset":
                # A new cpuset starts empty; its tasks could run nowhere.
                for name in ("cpuset.cpus", "cpuset.mems"):
                    (path / name).write_text((hierarchy / name).read_text())
            if (path / "cpu.shares").exists():
                # The host's processes sit in the root cgroup, each weighing 1024 against
                # this whole tree: under load the node's pods got a sliver of the CPU (Spark
                # Pi 160 s at load 11, 17.5 s at load 3). The tree weighs as many busy
                # processes as the node reports CPUs, as the kubelet weighs `kubepods`.
                (path / "cpu.shares").write_text(str(1024 * (os.cpu_count() or 1)))

    # -- teardown --

    def kill_leftovers(self, deadline: float = 30.0) -> None:
        # 30 s, not 10: at load 35 a process in the mount namespace outlived 10 s of SIGKILLs
        # once (the e2e lost-executor run; which process it was went unrecorded).
        exclude = {os.getpid(), self.holder.pid or 0}
        _kill_all(lambda: _pids_of(self._ids, self.cgroup_name) - exclude, deadline)

    def teardown(self) -> None:
        self.kill_leftovers()
        _remove_cgroups(self.cgroup_name)
        self.holder.stop()
        shutil.rmtree(self.scratch / "var-lib", ignore_errors=True)
        self._registration.unlink(missing_ok=True)

    def leftovers(self) -> list[str]:
        """What of this instance is still on the machine (empty after teardown)."""
        found = [
            str(hierarchy / self.cgroup_name)
            for hierarchy in cgroup_hierarchies(unified=True)
            if (hierarchy / self.cgroup_name).exists()
        ]
        if self.holder.running():
            found.append(f"the namespace holder, pid {self.holder.pid}")
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                with contextlib.suppress(OSError):
                    held = {os.readlink(f"/proc/{entry}/ns/{kind}") for kind in ("net", "mnt")}
                    if held & self._ids:
                        name = Path(f"/proc/{entry}/comm").read_text().strip()
                        found.append(f"pid {entry} ({name}) in {sorted(held & self._ids)}")
        with open("/proc/self/mountinfo") as mounts:
            found += [line.strip() for line in mounts if str(self.scratch) in line]
        return found
