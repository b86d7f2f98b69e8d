"""Image configs and the command a container runs (testenv/nodeagent/images.py)."""

from __future__ import annotations

import json

import pytest

from testenv.nodeagent.images import SHELL_IMAGE, Image, container_command, load_images

SPARK = Image(
    "sparkk8s/spark:4.3.0", "/tree", ("/opt/entrypoint.sh",), ("help",), "/opt/spark/work-dir"
)


def test_args_replace_the_cmd_and_keep_the_entrypoint():
    container = {"name": "spark-kubernetes-driver", "args": ["driver", "--properties-file", "/p"]}
    assert container_command(container, SPARK) == [
        "/opt/entrypoint.sh",
        "driver",
        "--properties-file",
        "/p",
    ]
    assert container_command({"name": "c"}, SPARK) == ["/opt/entrypoint.sh", "help"]


def test_command_replaces_the_entrypoint_and_drops_the_cmd():
    assert container_command({"name": "c", "command": ["/bin/sh", "-c", "true"]}, SPARK) == [
        "/bin/sh", "-c", "true",
    ]  # fmt: skip


def test_nothing_to_run_is_an_error_naming_the_container():
    with pytest.raises(ValueError, match="container c: no command"):
        container_command({"name": "c"}, Image(SHELL_IMAGE))


def test_the_images_file_adds_to_the_built_in_shell_image(tmp_path):
    path = tmp_path / "images.json"
    path.write_text(
        json.dumps(
            {"x/y:1": {"tree": "/t", "entrypoint": ["/e"], "workingDir": "/w", "env": {"A": "1"}}}
        )
    )
    images = load_images(path)
    assert set(images) == {SHELL_IMAGE, "x/y:1"}
    assert images["x/y:1"] == Image("x/y:1", "/t", ("/e",), (), "/w", {"A": "1"})
    assert "PATH" in images[SHELL_IMAGE].env
