"""measure_pi counts the memory of its own plane's pods only: every session's node agent
names its node `process-node-0`, so the agent's pid tells their cgroup folders apart."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from testenv.controlplane import ControlPlane
from testenv.nodeagent.cgroups import agent_cgroup_parent
from tests.runtime.measure_pi import cgroup_rss, own_cgroups


def _container(parent: Path, name: str, rss: int) -> None:
    (parent / name).mkdir(parents=True)
    (parent / name / "memory.stat").write_text(f"rss {rss}\ntotal_cache 9\ntotal_rss {rss}\n")


def _plane(agent_pid: int | None) -> ControlPlane:
    plane: Any = SimpleNamespace(
        agent=SimpleNamespace(node_name="process-node-0"),
        pids=lambda: {"kube-apiserver": 10, "node-agent": agent_pid},
    )
    return cast(ControlPlane, plane)


def test_another_sessions_agent_on_the_same_node_name_is_not_counted(tmp_path: Path):
    ours = agent_cgroup_parent("process-node-0", 111, tmp_path)
    theirs = agent_cgroup_parent("process-node-0", 222, tmp_path)
    _container(ours, "pod-a-driver", 300)
    _container(ours, "pod-b-executor", 200)
    _container(theirs, "pod-c-driver", 7000)
    assert own_cgroups(_plane(111), tmp_path) == ours
    assert cgroup_rss(own_cgroups(_plane(111), tmp_path)) == 500


def test_a_plane_without_an_agent_is_refused(tmp_path: Path):
    with pytest.raises(RuntimeError, match="no node agent"):
        own_cgroups(_plane(None), tmp_path)
