"""Test tiers: `make check` runs every test that needs no server (`pytest --tier=check`),
`make test` runs them all (`--tier=all`, the default).

A test needs a server when one of these holds, and `--tier=check` deselects it:

- its fixture closure (every fixture it uses, directly or through others) holds one of
  SERVER_FIXTURES, the fixtures that start a server or need what `make test` builds beyond
  `make venv` (Go binaries, the real node's packages, another Airflow install);
- it carries one of SERVER_MARKERS: `controlplane` and `airflow`, or `server` (declared in
  pyproject.toml) for a test that starts such a thing itself, outside any fixture (a JVM,
  the real node's namespaces).

The decision is made on names alone, at collection, so nothing starts to make it. A new
fixture that starts a server goes in SERVER_FIXTURES (tests/support/test_tiers.py fails on a
new session or module fixture that is in neither list); a test that starts one itself gets
`@pytest.mark.server`.
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest

TIERS = ("all", "check")

# The fixtures that start servers, by name; a fixture built on one needs no entry, since
# the closure holds both.
SERVER_FIXTURES = frozenset(
    {
        # tests/conftest.py: the planes (Go binaries of testenv/build.sh), the real node
        # (its Debian packages and images), the storage servers and the fault proxy.
        "control_plane",
        "real_node",
        "real_plane",
        "s3_server",
        "gcs_server",
        "azurite",
        "toxiproxy",
        # tests/support: Prometheus' statsd_exporter and Kueue's manager (Go builds).
        "statsd_exporter",
        "kueue_manager",
        "real_kueue_manager",
        # tests/e2e/conftest.py: the Airflow stack and its statsd_exporter.
        "airflow",
        "stack_statsd",
        # tests/kube/conftest.py: Debian's tinyproxy, unpacked by install_tinyproxy.sh.
        "tinyproxy_binary",
        # tests/packaging/test_wheel.py: a venv on the lowest Airflow's cached install
        # (tests/compat/airflow_venv.sh, a heavy install on a fresh machine).
        "clean_venv",
    }
)

SERVER_MARKERS = frozenset({"controlplane", "airflow", "server"})


def server_reason(fixturenames: Iterable[str], markers: Iterable[str]) -> str | None:
    """Why a test with these fixtures and markers needs a server, or None when it does not."""
    fixtures = sorted(SERVER_FIXTURES.intersection(fixturenames))
    if fixtures:
        return f"fixture {fixtures[0]}"
    marked = sorted(SERVER_MARKERS.intersection(markers))
    if marked:
        return f"marker {marked[0]}"
    return None


def needs_server(item: pytest.Item) -> bool:
    markers = {marker.name for marker in item.iter_markers()}
    return server_reason(getattr(item, "fixturenames", ()), markers) is not None


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--tier",
        choices=TIERS,
        default="all",
        help="check: only the tests that need no server (make check); all: every test",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("tier") != "check":
        return
    kept: list[pytest.Item] = []
    deselected: list[pytest.Item] = []
    for item in items:
        (deselected if needs_server(item) else kept).append(item)
    if deselected:
        items[:] = kept
        config.hook.pytest_deselected(items=deselected)
