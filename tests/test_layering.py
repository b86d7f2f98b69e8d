"""Imports point down: every import of every product module is checked against one table.

Layers, top to bottom (docs/architecture.md draws the same map):
- operators, sensors: the Airflow faces a DAG uses; may use triggers, hooks and links;
- triggers: may use hooks;
- hooks, links: the Airflow faces over the core;
- version_compat: the only module that imports Airflow;
- shell: the I/O below the faces (the kube client, the store, submitting); no Airflow;
- core: pure functions over plain data (the pipeline, the reducer, the application model).
Nothing imports an operator or a sensor, and the CLI imports no Airflow face.

Imports are read with `ast`, wherever they are (module level, inside functions, under
TYPE_CHECKING): a lazy import points up just as much as an eager one.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

PACKAGE = "airflow_provider_sparkk8s"
ROOT = Path(__file__).resolve().parent.parent / PACKAGE

# Module (dotted, without the package) -> layer. The longest matching prefix wins, so a
# single module can sit in another layer than its package (submission.submit does I/O).
LAYER_OF: dict[str, str] = {
    "": "core",  # the package itself: __version__, get_provider_info
    "provider_info": "core",
    "errors": "core",
    "application": "core",
    "submission": "core",
    "submission.submit": "shell",
    "submission.client_settings": "shell",
    "submission.uploader": "shell",
    "submission.local_inputs": "shell",
    "monitoring": "shell",
    "monitoring.reducer": "core",
    "monitoring.snapshot": "core",
    "monitoring.resync": "core",
    "kube": "shell",
    "kube.paths": "core",
    "version_compat": "compat",
    "hooks": "hooks",
    "links": "links",
    "triggers": "triggers",
    "operators": "operators",
    "sensors": "sensors",
    "cli": "cli",
}

FACES_BELOW_OPERATORS = {"triggers", "hooks", "links", "compat", "shell", "core"}
MAY_IMPORT: dict[str, set[str]] = {
    "core": {"core"},
    "shell": {"shell", "core"},
    "compat": set(),
    "hooks": {"compat", "shell", "core"},
    "links": {"compat", "shell", "core"},
    "triggers": {"hooks", "compat", "shell", "core"},
    "operators": FACES_BELOW_OPERATORS,
    "sensors": FACES_BELOW_OPERATORS,
    "cli": {"shell", "core"},
}
# Only these layers may import Airflow itself.
AIRFLOW_LAYERS = {"compat"}

# Imports that still point the wrong way while issue 11 lands in stages: (importer,
# imported). Each entry is removed by the change that fixes it; an entry that no longer
# matches anything fails the test, so the table only ever gets stricter.
NOT_YET_MOVED: set[tuple[str, str]] = set()


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path, root: Path = ROOT) -> set[str]:
    """Every module `path` imports, ours without the package prefix, Airflow as `airflow`."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                raise AssertionError(f"{path}: use absolute imports ({ast.unparse(node)})")
            base = node.module or ""
            # `from pkg import module` imports pkg.module; `from module import name`, module.
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for target in targets:
            top = target.split(".")[0]
            if top == "airflow":
                names.add("airflow")
            elif top == PACKAGE:
                names.add(_existing(target.removeprefix(PACKAGE).lstrip("."), root))
    return names


def _existing(dotted: str, root: Path) -> str:
    """The longest prefix of `dotted` that is a module or package of ours."""
    parts = dotted.split(".") if dotted else []
    while parts:
        candidate = root.joinpath(*parts)
        if candidate.with_suffix(".py").is_file() or (candidate / "__init__.py").is_file():
            return ".".join(parts)
        parts.pop()
    return ""


def layer(module: str) -> str:
    parts = module.split(".") if module else []
    while True:
        key = ".".join(parts)
        if key in LAYER_OF:
            return LAYER_OF[key]
        if not parts:
            raise AssertionError(f"{module!r} has no layer: add it to LAYER_OF")
        parts.pop()


def product_modules(root: Path = ROOT) -> dict[str, Path]:
    return {module_name(path, root): path for path in sorted(root.rglob("*.py"))}


@functools.cache
def violations(root: Path = ROOT) -> frozenset[tuple[str, str]]:
    found = set()
    for module, path in product_modules(root).items():
        own = layer(module)
        for target in imported_modules(path, root):
            if target == "airflow":
                allowed = own in AIRFLOW_LAYERS
            else:
                allowed = layer(target) in MAY_IMPORT[own] or _same_face(module, target)
            if not allowed:
                found.add((module, target))
    return frozenset(found)


def _same_face(module: str, target: str) -> bool:
    """A face's own modules may import each other (operators.spark_k8s -> operators.x)."""
    return layer(module) == layer(target) and module.split(".")[0] == target.split(".")[0]


def test_every_module_has_a_layer() -> None:
    for module in product_modules():
        assert layer(module) in MAY_IMPORT, module


def test_imports_point_down() -> None:
    upward = violations() - NOT_YET_MOVED
    assert not upward, "imports that point up (importer, imported):\n" + "\n".join(
        f"  {module} -> {target or PACKAGE}: {layer(module)} may not import "
        f"{'airflow' if target == 'airflow' else layer(target)}"
        for module, target in sorted(upward)
    )


def test_the_not_yet_moved_list_only_shrinks() -> None:
    fixed = NOT_YET_MOVED - violations()
    assert not fixed, f"fixed, so drop them from NOT_YET_MOVED: {sorted(fixed)}"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import airflow.sdk\n", {"airflow"}),
        (
            f"def f():\n    from {PACKAGE}.operators import spark_k8s\n",
            {"operators", "operators.spark_k8s"},
        ),
        (f"from {PACKAGE}.errors import SparkConfError\n", {"errors"}),
        (f"from {PACKAGE} import __version__\n", {""}),
    ],
)
def test_imports_are_found_wherever_they_are(
    tmp_path: Path, source: str, expected: set[str]
) -> None:
    module = tmp_path / "m.py"
    module.write_text(source)
    assert imported_modules(module) == expected


def test_upward_imports_are_reported(tmp_path: Path) -> None:
    """A small tree with one import of each kind: only the upward ones are reported."""
    modules = {
        "triggers/t.py": f"def f():\n    from {PACKAGE}.operators.o import X\n",
        "operators/o.py": f"from {PACKAGE}.triggers.t import f\nfrom {PACKAGE}.sensors import s\n",
        "sensors/s.py": f"from {PACKAGE}.hooks.h import H\n",
        "hooks/h.py": "from airflow.sdk import BaseHook\n",
        "cli/c.py": f"from {PACKAGE}.hooks import h\nfrom {PACKAGE}.errors import E\n",
        "errors.py": "",
    }
    for name, source in modules.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(source)
    assert set(violations(tmp_path)) == {
        ("triggers.t", "operators.o"),
        ("operators.o", "sensors.s"),
        ("hooks.h", "airflow"),
        ("cli.c", "hooks.h"),
    }


def test_the_architecture_map_shows_the_same_table() -> None:
    """docs/architecture.md's layer table: one row per layer, the same `may import` sets."""
    text = (ROOT.parent / "docs" / "architecture.md").read_text()
    rows = {}
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0] in MAY_IMPORT:
            allowed = set() if cells[2] == "nothing of ours" else set(cells[2].split(", "))
            rows[cells[0]] = allowed
    assert rows == MAY_IMPORT


def test_the_architecture_map_names_every_module() -> None:
    """Every module of the package appears in docs/architecture.md's map (by file name, or
    as a feature step by its name)."""
    text = (ROOT.parent / "docs" / "architecture.md").read_text()
    for module, path in product_modules().items():
        if path.name == "__init__.py":
            continue
        named = path.name in text or (
            module.startswith("submission.features.") and f" {path.stem}" in text
        )
        assert named, f"{module} is missing from docs/architecture.md"
