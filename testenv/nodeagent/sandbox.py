"""The shell script that turns a process into a container (pure: plan in, text out).

The runtime starts it as `unshare --mount --uts --propagation private sh <script>`, with the
container's environment. In its own mount namespace the script:

1. joins the container's memory cgroup, when there is one;
2. mounts a tmpfs at the container's sandbox directory and, on it, an overlay whose lower
   layer is the host's root: the container sees the host's files, and everything it writes
   (new mount points included) lands in the tmpfs, so no `mkdir` reaches the host;
3. gives it its own /dev (the usual device nodes only), /proc, /sys and /tmp;
4. lays each top-level directory of the image tree over the host's (another overlay);
5. stages every bind (volumes, the pod's hosts file, the termination-message file) on the
   tmpfs with the host's view of its source, read-only where the kubelet would mount it so;
6. sets the host name to the pod's and `chroot`s into the overlay, where it moves each
   staged mount to its mount path (so a path through a symlink such as /var/run -> /run
   resolves inside the container, never on the host), changes to the working directory
   and execs the container's command, which keeps the pid the runtime started.
"""

from __future__ import annotations

import posixpath
import shlex
from dataclasses import dataclass

STAGE = "/.sparkk8s-stage"  # where the staged binds wait inside the root, removed before exec
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
DEVICE_LINKS = (
    ("/proc/self/fd", "fd"),
    ("/proc/self/fd/0", "stdin"),
    ("/proc/self/fd/1", "stdout"),
    ("/proc/self/fd/2", "stderr"),
    ("pts/ptmx", "ptmx"),
)


@dataclass(frozen=True)
class Tools:
    """Absolute paths of the host tools the script calls (never the container's PATH)."""

    mount: str = "/usr/bin/mount"
    mkdir: str = "/usr/bin/mkdir"
    touch: str = "/usr/bin/touch"
    ln: str = "/usr/bin/ln"
    hostname: str = "/usr/bin/hostname"
    chroot: str = "/usr/sbin/chroot"
    umount: str = "/usr/bin/umount"


@dataclass(frozen=True)
class Bind:
    source: str  # on the host
    target: str  # inside the container
    read_only: bool = False
    is_file: bool = False


@dataclass(frozen=True)
class SandboxPlan:
    sandbox_dir: str  # empty host directory, private to this container
    hostname: str
    working_dir: str
    argv: tuple[str, ...]
    image_layers: tuple[tuple[str, str], ...] = ()  # (image tree's directory, target)
    binds: tuple[Bind, ...] = ()
    cgroup_procs: str | None = None
    tmpfs_size: str = "2g"
    started_marker: str | None = None  # printed on stdout right before the command runs


def _q(text: str) -> str:
    return shlex.quote(text)


def _absolute(path: str) -> str:
    """`path` as one clean absolute path (normpath keeps a leading "//")."""
    return "/" + posixpath.normpath(path).lstrip("/")


def _binds_inside(plan: SandboxPlan, tools: Tools) -> str:
    """Step 6, run by the container root's own shell: `$1` is the working directory."""
    t = tools
    lines = []
    for index, bind in enumerate(plan.binds):
        target = _q(_absolute(bind.target))
        if bind.is_file:
            parent = _q(posixpath.dirname(_absolute(bind.target)))
            lines.append(f"{t.mkdir} -p {parent} && {{ [ -e {target} ] || {t.touch} {target}; }}")
        else:
            lines.append(f"{t.mkdir} -p {target}")
        lines.append(f"{t.mount} --move {STAGE}/{index} {target}")
    lines += [
        f"{t.umount} -l {STAGE} && rmdir {STAGE}",
        f'{t.mkdir} -p "$1" && cd "$1" && shift',
    ]
    if plan.started_marker:
        lines.append(f"echo {_q(plan.started_marker)}")
    lines.append('exec "$@"')
    return "\n".join(lines)


def sandbox_script(plan: SandboxPlan, tools: Tools = Tools()) -> str:
    t = tools
    sandbox = plan.sandbox_dir
    root = f"{sandbox}/root"
    stage = f"{sandbox}/stage"
    lines = ["set -e"]
    if plan.cgroup_procs:
        lines.append(f"echo $$ > {_q(plan.cgroup_procs)}")
    lines += [
        f"{t.mount} -t tmpfs -o size={plan.tmpfs_size},mode=755 sparkk8s-sandbox {_q(sandbox)}",
        f"{t.mkdir} {_q(sandbox + '/upper')} {_q(sandbox + '/work')} {_q(root)} {_q(stage)}",
        f"{t.mount} -t overlay sparkk8s-root -o "
        + _q(f"lowerdir=/,upperdir={sandbox}/upper,workdir={sandbox}/work")
        + f" {_q(root)}",
        f"{t.mount} -t tmpfs -o size=1m,mode=755 sparkk8s-dev {_q(root + '/dev')}",
    ]
    for device in DEVICES:
        target = _q(f"{root}/dev/{device}")
        lines.append(f"{t.touch} {target} && {t.mount} --bind /dev/{device} {target}")
    lines += [
        f"{t.mkdir} {_q(root + '/dev/pts')} {_q(root + '/dev/shm')}",
        f"{t.mount} --bind /dev/pts {_q(root + '/dev/pts')}",
        f"{t.mount} -t tmpfs -o size=256m,mode=1777 sparkk8s-shm {_q(root + '/dev/shm')}",
        *(f"{t.ln} -s {_q(src)} {_q(f'{root}/dev/{name}')}" for src, name in DEVICE_LINKS),
        f"{t.mount} -t proc proc {_q(root + '/proc')}",
        f"{t.mount} --rbind /sys {_q(root + '/sys')}",
        f"{t.mount} -t tmpfs -o size=1g,mode=1777 sparkk8s-tmp {_q(root + '/tmp')}",
    ]
    for index, (layer, target) in enumerate(plan.image_layers):
        upper, work = f"{sandbox}/image-{index}/upper", f"{sandbox}/image-{index}/work"
        host_dir = _absolute(target)
        if host_dir.count("/") != 1 or host_dir == "/":
            raise ValueError(f"image layer {layer}: {target} is not a top-level directory")
        inside = _q(root + host_dir)
        lines += [
            f"if [ -L {_q(host_dir)} ]; then echo {_q(host_dir + ' is a symlink')} >&2; exit 1; fi",
            f"{t.mkdir} -p {_q(upper)} {_q(work)} {inside}",
            # The image's directory wins over the host's, as an upper image layer would.
            (
                f"if [ -d {_q(host_dir)} ]; then lower={_q(layer + ':' + host_dir)}; "
                f"else lower={_q(layer)}; fi"
            ),
            (
                f'{t.mount} -t overlay sparkk8s-image -o "lowerdir=$lower,upperdir={upper},'
                f'workdir={work}" {inside}'
            ),
        ]
    for index, bind in enumerate(plan.binds):
        staged = _q(f"{stage}/{index}")
        lines.append(f"{t.touch} {staged}" if bind.is_file else f"{t.mkdir} {staged}")
        lines.append(f"{t.mount} --bind {_q(bind.source)} {staged}")
        if bind.read_only:
            lines.append(f"{t.mount} -o remount,bind,ro {staged}")
    lines += [
        f"{t.mkdir} {_q(root + STAGE)}",
        f"{t.mount} --rbind {_q(stage)} {_q(root + STAGE)}",
        f"{t.hostname} {_q(plan.hostname)}",
        f"exec {t.chroot} {_q(root)} /bin/sh -c {_q(_binds_inside(plan, tools))} sh "
        + " ".join(_q(arg) for arg in (plan.working_dir, *plan.argv)),
    ]
    return "\n".join(lines) + "\n"
