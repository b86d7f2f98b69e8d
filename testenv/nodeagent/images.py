"""Images without a registry: an image name maps to a directory tree laid over the host's
root, with the entrypoint, working directory and environment an image config would carry.

The agent reads them from a JSON file (`load_images`); `testenv/runtime_image.py` writes the
Spark one. The pure part decides what a container runs (`container_command`), as a
container runtime combines the image's entrypoint with the pod's command and args.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SHELL_IMAGE = "sparkk8s/shell:1"  # the host's root alone: for plain process pods
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True)
class Image:
    name: str
    tree: str | None = None  # its top-level directories are laid over the host's
    entrypoint: tuple[str, ...] = ()
    cmd: tuple[str, ...] = ()
    working_dir: str = "/"
    env: Mapping[str, str] = field(default_factory=dict)


def shell_image() -> Image:
    return Image(name=SHELL_IMAGE, env={"PATH": DEFAULT_PATH})


def image_from_dict(name: str, data: Mapping[str, Any]) -> Image:
    return Image(
        name=name,
        tree=data.get("tree"),
        entrypoint=tuple(data.get("entrypoint") or ()),
        cmd=tuple(data.get("cmd") or ()),
        working_dir=data.get("workingDir") or "/",
        env=dict(data.get("env") or {}),
    )


def load_images(path: Path | None) -> dict[str, Image]:
    images = {SHELL_IMAGE: shell_image()}
    if path is not None:
        for name, data in json.loads(path.read_text()).items():
            images[name] = image_from_dict(name, data)
    return images


def container_command(container: Mapping[str, Any], image: Image) -> list[str]:
    """`command` replaces the entrypoint and drops the image's cmd; `args` replaces the cmd."""
    command: Sequence[str] = container.get("command") or image.entrypoint
    if container.get("command"):
        args: Sequence[str] = container.get("args") or ()
    else:
        args = container.get("args") or image.cmd
    argv = [*command, *args]
    if not argv:
        raise ValueError(f"container {container.get('name')}: no command, and the image has none")
    return argv
