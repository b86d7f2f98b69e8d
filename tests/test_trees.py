"""The trees beside the product import one way: tests/ and benchmarks/ share their harness
through testenv/ alone, never through each other (issue 46).

- testenv/ imports neither tests nor benchmarks: both of them use it;
- benchmarks/ imports nothing of tests/;
- tests/ imports nothing of benchmarks/, but for tests/benchmarks/: the tests of the
  benchmarks' own code import the modules they test, as the rest of tests/ imports the
  product;
- testenv/harness/ imports nothing of the product either (the harness that drives the
  product is elsewhere in testenv/: trigger_fleet/, fakes.py, real_spark.py).

Imports are read with `ast` wherever they are (inside functions too), and so are module
names in strings: code run in another interpreter, patch targets, `python -m` arguments.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PRODUCT = "airflow_provider_sparkk8s"
TREES = ("tests", "benchmarks", "testenv")
# A module name at a string's start, or after `from`/`import` in code held in a string.
_MODULE_IN_STRING = re.compile(
    rf"(?:^|\bfrom |\bimport )((?:tests|benchmarks|testenv|{PRODUCT})(?:\.\w+)+)"
)


def imported_modules(source: str) -> Iterator[tuple[int, str]]:
    """(line, dotted module name) of every absolute import in `source`, and of every module
    of ours a string names."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            for match in _MODULE_IN_STRING.finditer(node.value):
                yield node.lineno, match.group(1)


def forbidden_tops(relative: Path) -> set[str]:
    """The top-level packages a module at `relative` (to the repo) may not import."""
    tree, folder = relative.parts[0], relative.parts[1]
    if tree == "testenv":
        return {"tests", "benchmarks", *({PRODUCT} if folder == "harness" else ())}
    if tree == "benchmarks":
        return {"tests"}
    if folder == "benchmarks":  # tests/benchmarks/: the tests of the benchmarks' own code
        return set()
    return {"benchmarks"}


def crossings(tree: str) -> Iterator[str]:
    for path in sorted((REPO / tree).rglob("*.py")):
        relative = path.relative_to(REPO)
        forbidden = forbidden_tops(relative)
        for line, module in imported_modules(path.read_text()):
            if module.split(".")[0] in forbidden:
                yield f"{relative}:{line} imports {module}"


@pytest.mark.parametrize("tree", TREES)
def test_no_tree_imports_what_it_may_not(tree: str) -> None:
    assert list(crossings(tree)) == []


def test_the_reader_sees_imports_in_functions_and_module_names_in_strings() -> None:
    source = (
        "import tests.support.tiers\n"
        "def f():\n"
        "    from testenv.harness import kube\n"
        "    from . import sibling\n"
        "CODE = 'import os\\nfrom testenv.fakes import FakeHook\\n'\n"
        "TARGET = 'airflow_provider_sparkk8s.errors.KubeApiError'\n"
        "PROSE = 'the tests/ folder, and tests.'\n"
    )
    assert sorted(imported_modules(source)) == [
        (1, "tests.support.tiers"),
        (3, "testenv.harness"),
        (5, "testenv.fakes"),
        (6, "airflow_provider_sparkk8s.errors.KubeApiError"),
    ]


# One module of each kind, and what its rule forbids.
RULE_OF = {
    "testenv/harness/kube.py": {"tests", "benchmarks", PRODUCT},
    "testenv/fakes.py": {"tests", "benchmarks"},
    "testenv/trigger_fleet/tracked_apps.py": {"tests", "benchmarks"},
    "benchmarks/bench_trigger.py": {"tests"},
    "benchmarks/harness/metrics_clock.py": {"tests"},
    "tests/triggers/conftest.py": {"benchmarks"},
    "tests/conftest.py": {"benchmarks"},
    "tests/benchmarks/test_metrics_clock.py": set(),
}


@pytest.mark.parametrize("module", RULE_OF)
def test_each_tree_has_its_rule(module: str) -> None:
    assert (REPO / module).is_file()
    assert forbidden_tops(Path(module)) == RULE_OF[module]
