"""A session killed outright runs no teardown: its children die with it (PR_SET_PDEATHSIG),
but a process that left its process tree, as containerd's shims do, lives on in the node's
namespaces. The next node to start sweeps what an instance whose owner died left behind: in
its namespaces, only the node's own programs, since a dead namespace's number is reused by
the next one made, another session's pod's, say."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testenv.harness.waiting import wait_for
from testenv.realnode.namespaces import cgroup_hierarchies, registry, sweep_stale

# The real node's namespaces and its packages' dnsmasq: `make check` leaves it out.
pytestmark = [pytest.mark.server, pytest.mark.timeout(120)]
REPO = Path(__file__).resolve().parents[2]

# The owner: makes the namespaces (registering them), starts a daemon inside them that
# leaves its process tree (setsid, its parent gone), prints the daemon's pid and waits.
OWNER = """
import subprocess, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, {repo!r})
from testenv.realnode.namespaces import NodeNamespaces
from testenv.realnode.node import node_packages
scratch = Path(tempfile.mkdtemp(prefix="sparkk8s-realnode-stale-"))
namespaces = NodeNamespaces(scratch, node_packages(), "sparkk8s-realnode-stale-" + str(__import__("os").getpid()))
namespaces.start()
def detached(program):
    return subprocess.run(
        [*namespaces.enter(), "env", *(k + "=" + v for k, v in namespaces.tool_env().items()),
         "sh", "-c", "setsid " + program + " >/dev/null 2>&1 < /dev/null & echo $!"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()
# One of the node's programs (as a shim is), and a program from elsewhere.
own = detached(str(namespaces.packages / "usr/sbin/dnsmasq")
               + " -k --port=0 --conf-file=/dev/null -u root --pid-file=")
foreign = detached("sleep 600")
print(namespaces.cgroup_name, scratch, own, foreign, flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def test_what_a_killed_session_left_is_swept_by_the_next_node():
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER.format(repo=str(REPO))], stdout=subprocess.PIPE, text=True
    )
    assert owner.stdout is not None
    cgroup_name, scratch, own, foreign = owner.stdout.readline().split()
    daemon_pid, foreign_pid = int(own), int(foreign)
    try:
        assert (registry() / f"{cgroup_name}.json").exists()
        owner.send_signal(signal.SIGKILL)
        owner.wait(10)
        time.sleep(0.5)
        # The daemons outlived their session, holding the namespaces; the cgroups are there.
        assert _alive(daemon_pid) and _alive(foreign_pid)
        assert any((h / cgroup_name).exists() for h in cgroup_hierarchies())

        assert cgroup_name in sweep_stale()
        wait_for(lambda: not _alive(daemon_pid), 10, "the stale daemon gone")
        # Not the node's program: it could be anyone's in a reused namespace number.
        assert _alive(foreign_pid)
        assert not any((h / cgroup_name).exists() for h in cgroup_hierarchies(unified=True))
        assert not Path(scratch).exists()
        assert not (registry() / f"{cgroup_name}.json").exists()
    finally:
        if owner.poll() is None:
            owner.kill()
        for pid in (daemon_pid, foreign_pid):
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        sweep_stale()
