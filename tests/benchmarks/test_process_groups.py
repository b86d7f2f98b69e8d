"""The process-group reads of the benchmarks: a descendant that left the group still counts
(Airflow 3.3 puts each task process in a group of its own)."""

from __future__ import annotations

import os
import subprocess
import sys

from benchmarks.harness.process_groups import group_cpu, groups_rss_pss_kib, tree


def test_a_child_in_a_group_of_its_own_is_in_the_tree() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True
    )
    try:
        mine = os.getpgid(0)
        assert os.getpgid(child.pid) != mine
        assert child.pid in {process.pid for process in tree(mine)}
        assert group_cpu(mine).leader + group_cpu(mine).others > 0
        rss, pss = groups_rss_pss_kib((mine,))
        assert rss >= pss > 0
    finally:
        child.kill()
        child.wait()
