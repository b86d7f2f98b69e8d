"""Imports point down: every top folder of the package is one layer, checked against one table.

Layers, top to bottom (docs/architecture.md draws the same map):
- plugins: the api-server's face (the Spark UI's FastAPI app); may use hooks;
- operators, sensors: the Airflow faces a DAG uses; may use triggers, hooks and links;
- triggers: may use hooks; cli: the command-line face, no Airflow;
- hooks, links: the Airflow faces over the services;
- version_compat: the only module that imports Airflow;
- services: the I/O below the faces (submission, pods, store, uploads); no Airflow;
- kube: the HTTP client library;
- application, monitoring, submission: pure functions over plain data;
- base: the package's top-level modules (errors, objects, provider_info).
Nothing imports an operator or a sensor, and the CLI imports no Airflow face. Inside a folder
imports point one way too: its modules never import each other in a cycle.

The two largest layers, application and services, are split into topic folders (kopf's
`_core/reactor`, `_cogs/clients`): every module of theirs lives in one of `TOPICS`, and the
topic folders of one layer import each other one way (no cycle between folders, even where
the modules' own imports make none). submission keeps its modules flat but for
spark-submit's command line (`SPLIT_OFF`), which the rest of it never imports back. Below the faces one file name has one meaning: no two
modules share a name (the faces' `spark_k8s.py` and `connect_server.py` are module paths
DAGs and serialized triggers name, one per face folder as Airflow's providers do).

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

# Top folder (or top-level module) -> layer; one row a folder, no exceptions.
LAYER_OF: dict[str, str] = {
    "plugins": "plugins",
    "operators": "operators",
    "sensors": "sensors",
    "triggers": "triggers",
    "hooks": "hooks",
    "links": "links",
    "cli": "cli",
    "version_compat": "compat",
    "services": "services",
    "kube": "kube",
    "application": "application",
    "monitoring": "monitoring",
    "submission": "submission",
    "": "base",  # the package itself: __version__, get_provider_info
    "environment": "base",
    "errors": "base",
    "objects": "base",
    "provider_info": "base",
    "records": "base",
}

CORE = {"application", "monitoring", "submission", "base"}
BELOW_FACES = {"compat", "services", "kube", *CORE}
MAY_IMPORT: dict[str, set[str]] = {
    "plugins": {"hooks", *BELOW_FACES},
    "operators": {"triggers", "hooks", "links", *BELOW_FACES},
    "sensors": {"triggers", "hooks", "links", *BELOW_FACES},
    "triggers": {"hooks", *BELOW_FACES},
    "hooks": BELOW_FACES,
    "links": BELOW_FACES,
    "cli": {"services", "kube", *CORE},
    "compat": set(),
    "services": {"kube", *CORE},
    "kube": {"base"},
    "application": {"monitoring", "submission", "base"},
    "monitoring": {"base"},
    "submission": {"base"},
    "base": {"base"},
}
# Only these layers may import Airflow itself.
AIRFLOW_LAYERS = {"compat"}
# The faces: their module paths are what DAGs, Airflow's provider registry and serialized
# triggers name, so a face folder may hold a file name another face folder holds.
FACES = {"plugins", "operators", "sensors", "triggers", "hooks", "links", "cli"}

# Layer folder -> its topic folders; each module of the layer lives in one of them.
TOPICS: dict[str, set[str]] = {
    "application": {"following", "task", "policy", "ui", "connect", "metrics"},
    "services": {"submit", "pods", "following", "ui", "connect", "task", "cluster_access"},
}
# Layer folder -> topic folders split off its flat modules (which, with their other
# subpackages, count as one topic: the layer's own).
SPLIT_OFF: dict[str, set[str]] = {"submission": {"command_line"}}


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
    top = module.split(".")[0] if module else ""
    if top not in LAYER_OF:
        raise AssertionError(f"{module!r} has no layer: add its top folder to LAYER_OF")
    return LAYER_OF[top]


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
                allowed = layer(target) in MAY_IMPORT[own] or _same_folder(module, target)
            if not allowed:
                found.add((module, target))
    return frozenset(found)


def _same_folder(module: str, target: str) -> bool:
    """A folder's own modules may import each other (one way: see `folder_cycles`)."""
    return module.split(".")[0] == target.split(".")[0]


def folder_cycles(root: Path = ROOT) -> list[list[str]]:
    """Import cycles between the modules of one top folder (a package's __init__ aside)."""
    modules = product_modules(root)
    edges = {
        module: {
            target
            for target in imported_modules(path, root)
            if target != "airflow"
            and target in modules
            and target != module
            and _same_folder(module, target)
            and modules[target].name != "__init__.py"
        }
        for module, path in modules.items()
    }
    return _cycles(edges)


def topic(module: str) -> str:
    """A module's topic folder (`application.following`, `submission.command_line`), the
    layer itself for the rest of a layer with split-off topics, or "" elsewhere."""
    parts = module.split(".")
    if len(parts) > 2 and parts[1] in TOPICS.get(parts[0], SPLIT_OFF.get(parts[0], set())):
        return ".".join(parts[:2])
    return parts[0] if parts[0] in SPLIT_OFF else ""


def topic_cycles(root: Path = ROOT) -> list[list[str]]:
    """Import cycles between the topic folders of one layer."""
    edges: dict[str, set[str]] = {}
    for module, path in product_modules(root).items():
        if not topic(module):
            continue
        edges.setdefault(topic(module), set()).update(
            topic(target)
            for target in imported_modules(path, root)
            if topic(target) and topic(target) != topic(module) and _same_folder(module, target)
        )
    return _cycles(edges)


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every cycle a depth-first walk of `edges` meets, each as the path that closes it."""
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(edges[module]):
            if state.get(target) == 1:
                cycles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module, [module])
    return cycles


def loose_modules(root: Path = ROOT) -> list[str]:
    """Modules of a topic layer outside its topic folders."""
    loose = []
    for module, path in product_modules(root).items():
        parts = module.split(".")
        in_topic = len(parts) == 3 and parts[1] in TOPICS.get(parts[0], set())
        if parts[0] in TOPICS and path.name != "__init__.py" and not in_topic:
            loose.append(module)
    return loose


def shared_file_names(root: Path = ROOT) -> dict[str, list[str]]:
    """File names held by two modules or more, where one of them is below the faces."""
    by_name: dict[str, list[str]] = {}
    for module, path in product_modules(root).items():
        if path.name != "__init__.py":
            by_name.setdefault(path.name, []).append(module)
    return {
        name: modules
        for name, modules in by_name.items()
        if len(modules) > 1 and any(layer(module) not in FACES for module in modules)
    }


def test_every_module_has_a_layer() -> None:
    for module in product_modules():
        assert layer(module) in MAY_IMPORT, module


def test_imports_point_down() -> None:
    upward = violations()
    assert not upward, "imports that point up (importer, imported):\n" + "\n".join(
        f"  {module} -> {target or PACKAGE}: {layer(module)} may not import "
        f"{'airflow' if target == 'airflow' else layer(target)}"
        for module, target in sorted(upward)
    )


def test_imports_inside_a_folder_point_one_way() -> None:
    cycles = folder_cycles()
    assert not cycles, "import cycles inside a folder:\n" + "\n".join(
        "  " + " -> ".join(cycle) for cycle in cycles
    )


def test_every_module_of_a_topic_layer_is_in_a_topic_folder() -> None:
    assert not loose_modules(), "modules outside a topic folder (add it to one of TOPICS):\n" + (
        "\n".join(f"  {module}" for module in loose_modules())
    )
    for top, topics in TOPICS.items():
        on_disk = {path.parent.name for path in (ROOT / top).glob("*/__init__.py")}
        assert on_disk == topics, f"{top}/: topic folders on disk differ from TOPICS"
    for top, topics in SPLIT_OFF.items():
        for name in topics:
            assert (ROOT / top / name / "__init__.py").is_file(), f"{top}/{name}/ is gone"


def test_topic_folders_import_each_other_one_way() -> None:
    cycles = topic_cycles()
    assert not cycles, "import cycles between topic folders of one layer:\n" + "\n".join(
        "  " + " -> ".join(cycle) for cycle in cycles
    )


def test_one_file_name_one_meaning() -> None:
    shared = shared_file_names()
    assert not shared, "file names held by more than one module:\n" + "\n".join(
        f"  {name}: {', '.join(modules)}" for name, modules in sorted(shared.items())
    )


def test_topic_rules_are_reported(tmp_path: Path) -> None:
    """A cycle between two topic folders (their modules make none), and between a split-off
    topic and its layer's flat modules; a loose module, and a file name below the faces held
    twice; the faces' shared names are not reported."""
    modules = {
        "application/__init__.py": "",
        "application/loose.py": "",
        "application/following/__init__.py": "",
        "application/following/follower.py": f"from {PACKAGE}.application.task.ids import I\n",
        "application/following/timeouts.py": "",
        "application/task/__init__.py": "",
        "application/task/ids.py": "",
        "application/task/resume.py": (
            f"def f():\n    from {PACKAGE}.application.following import timeouts\n"
        ),
        "services/__init__.py": "",
        "services/pods/__init__.py": "",
        "services/pods/timeouts.py": "",
        "submission/__init__.py": "",
        "submission/conf.py": f"from {PACKAGE}.submission.command_line.arguments import A\n",
        "submission/command_line/__init__.py": "",
        "submission/command_line/arguments.py": f"from {PACKAGE}.submission.spec import S\n",
        "submission/spec.py": "",
        "operators/__init__.py": "",
        "operators/spark_k8s.py": "",
        "triggers/__init__.py": "",
        "triggers/spark_k8s.py": "",
    }
    for name, source in modules.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(source)
    assert folder_cycles(tmp_path) == []
    assert topic_cycles(tmp_path) == [
        ["application.following", "application.task", "application.following"],
        ["submission", "submission.command_line", "submission"],
    ]
    assert loose_modules(tmp_path) == ["application.loose"]
    assert shared_file_names(tmp_path) == {
        "timeouts.py": ["application.following.timeouts", "services.pods.timeouts"]
    }


def test_a_cycle_inside_a_folder_is_reported(tmp_path: Path) -> None:
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "__init__.py").write_text("")
    (tmp_path / "core" / "a.py").write_text(f"from {PACKAGE}.core.b import X\n")
    (tmp_path / "core" / "b.py").write_text(f"def f():\n    from {PACKAGE}.core import a\n")
    (tmp_path / "core" / "c.py").write_text(f"from {PACKAGE}.core.a import Y\n")
    assert folder_cycles(tmp_path) == [["core.a", "core.b", "core.a"]]


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
        "monitoring/m.py": f"from {PACKAGE}.services.s import S\nfrom {PACKAGE}.errors import E\n",
        "services/s.py": f"from {PACKAGE}.kube.k import K\n",
        "kube/k.py": f"from {PACKAGE}.submission.p import P\n",
        "submission/p.py": "",
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
        ("monitoring.m", "services.s"),
        ("kube.k", "submission.p"),
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


def test_the_architecture_map_shows_every_topic_folder() -> None:
    text = (ROOT.parent / "docs" / "architecture.md").read_text()
    for top, topics in {**TOPICS, **SPLIT_OFF}.items():
        for name in sorted(topics):
            assert f" {name}/ " in text, f"{top}/{name}/ is missing from docs/architecture.md"


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
