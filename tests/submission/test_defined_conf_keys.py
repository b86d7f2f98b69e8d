"""The generated table of the conf keys each Spark line defines: lines in order, every mask a
non-empty set of those lines, and known keys on the lines Spark added them in."""

from __future__ import annotations

import pytest

from airflow_provider_sparkk8s.submission.defined_conf_keys import KEYS, LINES


def lines_of(key: str) -> tuple[str, ...]:
    return tuple(line for bit, line in enumerate(LINES) if KEYS[key] >> bit & 1)


def test_the_lines_are_the_five_supported_ones_oldest_first() -> None:
    assert LINES == ("3.5", "4.0", "4.1", "4.2", "4.3")


def test_every_key_is_a_spark_key_defined_by_at_least_one_line() -> None:
    every_line = (1 << len(LINES)) - 1
    assert len(KEYS) > 1500
    assert all(key.startswith("spark.") for key in KEYS)
    assert all(0 < mask <= every_line for mask in KEYS.values())


@pytest.mark.parametrize(
    ("key", "lines"),
    [
        ("spark.executor.memory", ("3.5", "4.0", "4.1", "4.2", "4.3")),
        ("spark.kubernetes.container.image", ("3.5", "4.0", "4.1", "4.2", "4.3")),
        ("spark.api.mode", ("4.0", "4.1", "4.2", "4.3")),
        ("spark.kubernetes.driver.annotateExitException", ("4.1", "4.2", "4.3")),
        ("spark.kubernetes.executor.podDeletionCost", ("4.2", "4.3")),
        ("spark.kubernetes.driver.service.publishNotReadyAddresses", ("4.3",)),
    ],
)
def test_known_keys_are_on_the_lines_that_define_them(key: str, lines: tuple[str, ...]) -> None:
    assert lines_of(key) == lines


def test_a_made_up_key_is_not_defined() -> None:
    assert "spark.executor.memroy" not in KEYS
