"""The sandbox script (testenv/nodeagent/sandbox.py): its shape as text, and what it does when
run as root in a mount namespace, as the node agent runs it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from testenv.nodeagent.sandbox import STAGE, Bind, SandboxPlan, sandbox_script

can_unshare = os.geteuid() == 0 and shutil.which("unshare") is not None


def plan(tmp_path: Path, argv: tuple[str, ...], **extra: object) -> SandboxPlan:
    (tmp_path / "sandbox").mkdir()
    return SandboxPlan(
        sandbox_dir=str(tmp_path / "sandbox"),
        hostname="pi-driver",
        working_dir="/opt/app/work",
        argv=argv,
        **extra,  # type: ignore[arg-type]
    )


def test_binds_are_staged_outside_and_moved_into_place_inside_the_root(tmp_path):
    script = sandbox_script(
        plan(tmp_path, ("/bin/true",), binds=(Bind("/src/vol", "/var/run/secrets/x", True),))
    )
    outside, _, inside = script.partition("exec /usr/sbin/chroot ")
    assert outside.startswith("set -e\n")
    assert f"--bind /src/vol {tmp_path}/sandbox/stage/0" in outside
    assert f"remount,bind,ro {tmp_path}/sandbox/stage/0" in outside
    # The move happens in the root's own shell, where /var/run resolves inside the root.
    assert inside.startswith(f"{tmp_path}/sandbox/root /bin/sh -c ")
    assert f"--move {STAGE}/0 /var/run/secrets/x" in inside
    assert "--move" not in outside


def test_an_image_layer_must_be_a_top_level_directory(tmp_path):
    with pytest.raises(ValueError, match="not a top-level directory"):
        sandbox_script(plan(tmp_path, ("/bin/true",), image_layers=(("/tree/opt/x", "/opt/x"),)))


@pytest.mark.skipif(not can_unshare, reason="needs root and unshare (the node agent's own needs)")
def test_the_container_sees_its_image_volumes_and_hosts_and_the_host_is_untouched(tmp_path):
    image = tmp_path / "image"
    (image / "opt" / "app").mkdir(parents=True)
    (image / "opt" / "app" / "hello").write_text("from the image\n")
    volume = tmp_path / "volume"
    volume.mkdir()
    (volume / "token").write_text("jwt\n")
    hosts = tmp_path / "hosts"
    hosts.write_text("127.9.9.9\tdriver-svc.jobs.svc\n")
    message = tmp_path / "termination-log"
    message.write_text("")
    marker = f"/var/data/sparkk8s-sandbox-test-{os.getpid()}"
    command = (
        'printf "%s|" "$@"; echo; pwd; hostname; cat /opt/app/hello /var/run/secrets/t/token;'
        f" getent hosts driver-svc.jobs.svc; mkdir -p {marker} && echo made;"
        " touch /var/run/secrets/t/new 2>/dev/null || echo read-only;"
        " echo bye > /dev/termination-log; ls /.sparkk8s-stage 2>/dev/null || echo unstaged"
    )
    script = sandbox_script(
        plan(
            tmp_path,
            ("/bin/sh", "-c", command, "sh", "it's", "a b", "$HOME"),
            image_layers=((str(image / "opt"), "/opt"),),
            binds=(
                Bind(str(volume), "/var/run/secrets/t", read_only=True),
                Bind(str(hosts), "/etc/hosts", is_file=True),
                Bind(str(message), "/dev/termination-log", is_file=True),
            ),
        )
    )
    (tmp_path / "run.sh").write_text(script)
    done = subprocess.run(
        ["unshare", "--mount", "--uts", "--propagation", "private", "/bin/sh", str(tmp_path / "run.sh")],
        check=False, capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "it's|a b|$HOME|",
        "/opt/app/work",
        "pi-driver",
        "from the image",
        "jwt",
        "127.9.9.9       driver-svc.jobs.svc",
        "made",
        "read-only",
        "unstaged",
    ]
    assert message.read_text() == "bye\n"
    # Nothing the container made reached the host: not the mount points, not the work dir.
    assert not Path(marker).exists()
    assert not Path("/run/secrets/t").exists()
    assert sorted(p.name for p in (image / "opt" / "app").iterdir()) == ["hello"]
    assert sorted(p.name for p in volume.iterdir()) == ["token"]
