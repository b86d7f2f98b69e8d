"""A driver pod template's `securityContext` on the real kubelet (issue 22): sparkk8s-submit
with `spark.kubernetes.driver.podTemplateFile` naming a template whose pod runs as uid 1000
(a uid the image does not know; it runs as 185) with fsGroup 2000 and an emptyDir volume.
The rendered pod carries them, and the driver's own log, written from inside its container,
shows the uid, the fsGroup among its groups and on the volume, while the executor (no
template) runs as the image's user."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from kubernetes.client import ApiClient

from testenv.controlplane import ControlPlane
from testenv.real_spark import (
    REAL_SPARK_TIMINGS,
    SMALL_PODS,
    PodRecorder,
    driver_log,
    submit_with_cli,
)
from testenv.realnode.image import SPARK_UID
from testenv.runtime_image import EXAMPLES

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(600)]
IDENTITY = f"local://{EXAMPLES}/identity.py"
RUN_AS_USER, FS_GROUP = 1000, 2000
SCRATCH = "/opt/sparkk8s/scratch"


def driver_template() -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "spec": {
            "securityContext": {"runAsUser": RUN_AS_USER, "fsGroup": FS_GROUP},
            "containers": [
                {
                    "name": "spark-kubernetes-driver",
                    "volumeMounts": [{"name": "scratch", "mountPath": SCRATCH}],
                }
            ],
            "volumes": [{"name": "scratch", "emptyDir": {}}],
        },
    }


def test_the_driver_runs_as_its_templates_user_with_its_fs_group_on_the_volume(
    real_plane: ControlPlane,
    real_namespace: str,
    real_submitter: Path,
    real_admin: ApiClient,
    tmp_path: Path,
) -> None:
    ns = real_namespace
    template = tmp_path / "driver-template.yaml"
    template.write_text(json.dumps(driver_template()))  # JSON is YAML
    conf = {
        **SMALL_PODS,
        "spark.executor.instances": "1",
        "spark.kubernetes.driver.podTemplateFile": str(template),
    }
    recorder = PodRecorder(real_plane, ns).start()
    started = time.monotonic()
    done = submit_with_cli(real_plane, ns, real_submitter, "identity", [IDENTITY, SCRATCH], conf)
    REAL_SPARK_TIMINGS["real node, securityContext template: succeeded (CLI exit)"] = (
        time.monotonic() - started
    )
    recorder.stop()
    (driver,) = recorder.names("driver")
    log = driver_log(real_admin, ns, driver)
    assert done.returncode == 0, done.stdout + done.stderr + log[-3000:]

    # The pod as the API server holds it: the template's context, volume and mount.
    spec = recorder.pods[driver]["spec"]
    assert spec["securityContext"] == {"runAsUser": RUN_AS_USER, "fsGroup": FS_GROUP}
    assert {"name": "scratch", "emptyDir": {}} in spec["volumes"]
    (container,) = [c for c in spec["containers"] if c["name"] == "spark-kubernetes-driver"]
    assert {"name": "scratch", "mountPath": SCRATCH} in container["volumeMounts"]

    # From inside the driver's container: the template's uid; no runAsGroup, so the runtime
    # gives the primary group 0 (the uid has no passwd entry of the image's); the fsGroup
    # is a supplementary group, and owns the volume (setgid, so new files inherit it).
    found = re.search(r"driver identity: uid=(\d+) gid=(\d+) groups=([\d,]*) spark-user=", log)
    assert found, log[-3000:]
    uid, gid, groups = int(found[1]), int(found[2]), {int(g) for g in found[3].split(",") if g}
    assert (uid, gid) == (RUN_AS_USER, 0), found[0]
    assert FS_GROUP in groups, found[0]
    volume_line = rf"volume {SCRATCH}: dir gid=(\d+) mode=([0-7]+) file uid=(\d+) gid=(\d+)"
    volume = re.search(volume_line, log)
    assert volume, log[-3000:]
    assert int(volume[1]) == FS_GROUP and int(volume[2], 8) & 0o2000, volume[0]
    assert (int(volume[3]), int(volume[4])) == (RUN_AS_USER, FS_GROUP), volume[0]
    # The executor has no template: it runs as the image's user, without the fsGroup.
    executor = re.search(r"executor identity: uid=(\d+) gid=(\d+) groups=([\d,]*)", log)
    assert executor, log[-3000:]
    assert (int(executor[1]), int(executor[2])) == (SPARK_UID, SPARK_UID), executor[0]
    assert str(FS_GROUP) not in executor[3].split(","), executor[0]
