"""Parity scenarios as data: one YAML file per scenario in `scenarios/`.

A scenario names the Spark lines it runs on (every scenario of the newest line also runs
on each older 4.x line, so each line we support is checked against its own spark-submit),
the spark-submit arguments (before the primary
resource the runner puts `--master`, `--deploy-mode` and `waitAppCompletion=false`), extra
`--conf` pairs, the submitter's environment, and local files to create in a temp dir.
`{tmp}` in any argument, conf value, env value or file content stands for that temp dir.
`jars` are jar files to create there: path -> the manifest's text (`null`: a jar without
one), with the same bytes on every run. An uploaded file that is not UTF-8 is captured as
its sha256.
`upload_dir` names the folder (under the temp dir) a `file://` upload path points at: every
file found there after the submission is part of the capture. `expect_failure` marks a
scenario where spark-submit refuses before any request; its `refused` texts (the key and the
value, say) must all be in our error message. `refuse-*.yaml` hold spark-submit's own
submit-side checks, one scenario per check.
"""

from __future__ import annotations

import os
import zipfile
from dataclasses import dataclass, field
from hashlib import sha256
from pathlib import Path
from typing import Any

import yaml

SCENARIO_DIR = Path(__file__).parent / "scenarios"
GOLDEN_DIR = Path(__file__).parent / "golden"
SPARK_LINES = ("4.3.0", "3.5.9")  # the default of a scenario that names none
NEWEST_LINE = "4.3.0"
OLDER_4X_LINES = ("4.2.1", "4.1.4", "4.0.5")
ALL_LINES = (*SPARK_LINES, *OLDER_4X_LINES)
# The submitting user is part of the driver env (SPARK_USER); fixed so it is not random.
SUBMITTING_USER = "parity-user"


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    spark_lines: tuple[str, ...]
    args: tuple[str, ...]
    conf: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    # Variables the submitter does not have (SPARK_USER: the fallbacks spark-submit takes).
    unset_env: tuple[str, ...] = ()
    files: dict[str, str] = field(default_factory=dict)
    jars: dict[str, str | None] = field(default_factory=dict)
    upload_dir: str | None = None
    expect_failure: bool = False
    refused: tuple[str, ...] = ()  # texts our error must hold when we refuse

    def materialise(self, tmp: Path) -> None:
        """Create the scenario's local files under `tmp`."""
        for relative, content in self.files.items():
            path = tmp / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content.replace("{tmp}", str(tmp)))
        for relative, manifest in self.jars.items():
            path = tmp / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            write_jar(path, manifest)

    def argv(self, master: str, tmp: Path) -> list[str]:
        """spark-submit's arguments after the program name, identical for both tools."""
        argv = [
            "--master",
            master,
            "--deploy-mode",
            "cluster",
            "--conf",
            "spark.kubernetes.submission.waitAppCompletion=false",
        ]
        for key, value in self.conf.items():
            argv += ["--conf", f"{key}={value}"]
        argv += list(self.args)
        return [arg.replace("{tmp}", str(tmp)) for arg in argv]

    def environment(self, tmp: Path) -> dict[str, str]:
        """The submitter's environment: only what the scenario sets, plus a fixed user."""
        env = {"SPARK_USER": SUBMITTING_USER}
        env.update({key: value.replace("{tmp}", str(tmp)) for key, value in self.env.items()})
        for key in self.unset_env:
            env.pop(key, None)
        return env


def _as_str(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def lines_of(declared: tuple[str, ...]) -> tuple[str, ...]:
    """The declared lines, plus the older 4.x lines when the newest is among them."""
    if NEWEST_LINE not in declared:
        return declared
    return (*declared, *(line for line in OLDER_4X_LINES if line not in declared))


def _declared_lines(data: dict[str, Any]) -> tuple[str, ...]:
    declared = tuple(data.get("spark_lines", SPARK_LINES))
    # `exact_lines`: a feature only some lines ship (Volcano: 4.2+), so no older 4.x lines.
    return declared if data.get("exact_lines") else lines_of(declared)


def load(path: Path) -> Scenario:
    data = yaml.safe_load(path.read_text())
    return Scenario(
        name=path.stem,
        description=data.get("description", ""),
        spark_lines=_declared_lines(data),
        args=tuple(_as_str(arg) for arg in data["args"]),
        conf={key: _as_str(value) for key, value in (data.get("conf") or {}).items()},
        env={key: _as_str(value) for key, value in (data.get("env") or {}).items()},
        unset_env=tuple(data.get("unset_env") or ()),
        files=dict(data.get("files") or {}),
        jars=dict(data.get("jars") or {}),
        upload_dir=data.get("upload_dir"),
        expect_failure=bool(data.get("expect_failure", False)) or bool(data.get("refused")),
        refused=tuple(_as_str(text) for text in data.get("refused") or ()),
    )


def all_scenarios() -> list[Scenario]:
    return [load(path) for path in sorted(SCENARIO_DIR.glob("*.yaml"))]


def golden_path(scenario: Scenario, line: str) -> Path:
    return GOLDEN_DIR / f"{scenario.name}.{line}.json"


def uploaded_files(scenario: Scenario, tmp: Path) -> dict[str, str]:
    """Every file under the scenario's upload folder: relative path -> text content."""
    if scenario.upload_dir is None:
        return {}
    root = tmp / scenario.upload_dir
    if not root.exists():
        return {}
    found = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.name.endswith(".crc"):
            content = path.read_bytes()
            try:
                found[path.relative_to(root).as_posix()] = content.decode("utf-8")
            except UnicodeDecodeError:
                found[path.relative_to(root).as_posix()] = f"sha256:{sha256(content).hexdigest()}"
    return found


def write_jar(path: Path, manifest: str | None) -> None:
    """A small jar, its manifest first (where JarInputStream looks); fixed times, same bytes."""
    with zipfile.ZipFile(path, "w") as jar:
        if manifest is not None:
            jar.writestr(zipfile.ZipInfo("META-INF/MANIFEST.MF"), manifest)
        jar.writestr(zipfile.ZipInfo("com/example/Main.class"), b"\xca\xfe\xba\xbe")


def real_tmp(tmp: Path) -> Path:
    return Path(os.path.realpath(tmp))
