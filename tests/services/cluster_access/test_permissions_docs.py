"""docs/connection.md's "Checking a connection" lists and counts the permissions the Test button
asks for as services/cluster_access/permissions.py has them (issue 46: the page said 19 where the button
reported 20): the ones every submission needs, which fail the test when missing, and the ones
only some applications need, named without failing it."""

from __future__ import annotations

import re
from pathlib import Path

from airflow_provider_sparkk8s.hooks.spark_k8s import connection_report
from airflow_provider_sparkk8s.services.cluster_access.permissions import (
    CONDITIONAL_PERMISSIONS,
    REQUIRED_ACCESS,
)

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "connection.md"


def section() -> str:
    return GUIDE.read_text().split("## Checking a connection", 1)[1].split("\n## ", 1)[0]


def table(header: str) -> list[str]:
    """The first column of the table whose header starts with `header`, in order."""
    rows = section().split(f"| {header}", 1)[1].split("\n\n", 1)[0].splitlines()[2:]
    return [re.match(r"\| `([^`]+)` \|", row).group(1) for row in rows]  # type: ignore[union-attr]


def test_the_required_permissions_are_listed_and_counted_as_the_button_counts_them() -> None:
    assert table("permission every submission needs") == [a.describe() for a in REQUIRED_ACCESS]
    count = len(REQUIRED_ACCESS)
    assert f"**{count}** permissions every submission needs" in section()
    # What the button says: the count the page gives.
    _, message = connection_report("https://k", {"gitVersion": "v1"}, "spark", [])
    assert f"all {count} permissions the provider needs are granted" in message
    assert f"all {count} permissions the provider needs are" in section()


def test_the_conditional_permissions_are_listed_and_counted() -> None:
    listed = table("permission only some applications need")
    assert listed == [p.access.describe() for p in CONDITIONAL_PERMISSIONS]
    assert f"**{len(CONDITIONAL_PERMISSIONS)}** more that only some applications need" in section()
