"""Kubernetes quantities (testenv/nodeagent/quantity.py)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from testenv.nodeagent.quantity import ceil_units, parse_quantity


@pytest.mark.parametrize(
    ("text", "value"),
    [("896Mi", 896 * 2**20), ("1Gi", 2**30), ("1.5G", 1_500_000_000), ("500m", Decimal("0.5")),
     ("2", 2), ("1e3", 1000), (3, 3)],
)  # fmt: skip
def test_parse(text, value):
    assert parse_quantity(text) == value


def test_ceil_units_rounds_up_as_the_downward_api_does():
    assert ceil_units("500m") == 1
    assert ceil_units("896Mi", "1Mi") == 896
    assert ceil_units("1G", "1Mi") == 954


def test_a_bad_quantity_is_named():
    with pytest.raises(ValueError, match="'12 apples' is not a Kubernetes quantity"):
        parse_quantity("12 apples")
