"""`--tier=check` keeps a test that needs no server and deselects one that does, by its
fixture closure or its markers, before anything starts."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

from tests.support.tiers import SERVER_FIXTURES, SERVER_MARKERS, server_reason

TESTS = Path(__file__).resolve().parents[1]

# Session and module fixtures that start nothing: the ones a check-tier test may use.
STARTS_NOTHING = {
    "dag_bag": "the example DAGs, parsed in this process",
    "pki": "certificates made with the cryptography package",
    "wheel": "pip builds this checkout's wheel, without its dependencies",
    "metadata": "read from that wheel",
    "compose": "docker-compose.yaml, read",
}

PLUGINS = ("-p", "tests.support.tiers")
INI = """[pytest]
asyncio_default_fixture_loop_scope = function
markers =
    airflow: runs real Airflow components
    server: starts a server itself
"""
CONFTEST = """
import pytest

@pytest.fixture(scope="session")
def control_plane():
    raise AssertionError("the check tier started a plane")

@pytest.fixture
def namespace(control_plane):
    return "ns"
"""
TESTS_FILE = """
import pytest

def test_pure():
    pass

def test_on_the_plane(namespace):
    pass

@pytest.mark.airflow
def test_marked_airflow():
    pass

@pytest.mark.server
def test_starts_a_jvm_itself():
    pass
"""


def test_a_server_fixture_anywhere_in_the_closure_or_a_server_marker_is_a_reason():
    assert server_reason(["tmp_path", "control_plane"], []) == "fixture control_plane"
    assert server_reason(["tmp_path"], ["parametrize", "controlplane"]) == "marker controlplane"
    assert server_reason(["tmp_path", "monkeypatch"], ["parametrize", "timeout"]) is None


def test_the_check_tier_keeps_the_pure_test_alone(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_tier=TESTS_FILE)
    result = pytester.runpytest(*PLUGINS, "--tier=check", "-q")
    result.assert_outcomes(passed=1, deselected=3)
    assert result.outlines[-1].startswith("1 passed, 3 deselected")
    # Every test is collected without the option; the plane's stand-in then fails.
    everything = pytester.runpytest(*PLUGINS, "-q")
    everything.assert_outcomes(passed=3, errors=1)


def test_a_check_with_only_server_tests_exits_5(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_plane="def test_on_the_plane(namespace):\n    pass\n")
    result = pytester.runpytest(*PLUGINS, "--tier=check", "-q")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


@functools.cache
def _wide_fixtures() -> list[tuple[Path, str, list[str], bool]]:
    """(file, name, parameters, module marked for servers) of every session, package, module
    or class fixture under tests/."""
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        tree = ast.parse(path.read_text())
        marked = any(
            isinstance(node, ast.Assign)
            and any(getattr(target, "id", "") == "pytestmark" for target in node.targets)
            and any(f"mark.{marker}" in ast.unparse(node.value) for marker in SERVER_MARKERS)
            for node in tree.body
        )
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for decorator in node.decorator_list:
                scoped = isinstance(decorator, ast.Call) and any(
                    keyword.arg == "scope" and ast.unparse(keyword.value) != "'function'"
                    for keyword in decorator.keywords
                )
                if scoped:
                    parameters = [argument.arg for argument in node.args.args]
                    found.append((path, node.name, parameters, marked))
    return found


def test_every_wide_fixture_is_a_server_or_known_to_start_nothing():
    """A new session or module fixture is either a server (SERVER_FIXTURES), built on one,
    in a module whose tests are all marked, or listed here as starting nothing: so a new
    server never slips into `make check`."""
    unsorted = [
        f"{path.relative_to(TESTS.parent)}: {name}"
        for path, name, parameters, marked in _wide_fixtures()
        if name not in SERVER_FIXTURES
        and not SERVER_FIXTURES.intersection(parameters)
        and not marked
        and name not in STARTS_NOTHING
    ]
    assert unsorted == []


def test_every_listed_server_fixture_exists():
    """A renamed server fixture would silently come back into the check tier."""
    defined = {name for _, name, _, _ in _wide_fixtures()}
    assert sorted(SERVER_FIXTURES - defined) == []
