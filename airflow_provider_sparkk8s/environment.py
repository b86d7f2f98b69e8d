"""The process environment as the layers receive it: read through, never shown.

A task's environment holds Airflow's connections (`AIRFLOW_CONN_*`), tokens and storage
keys. A traceback that prints its frames' locals (rich does, in Airflow 3.0's `dags test`)
shows an `os.environ` or a dict variable by variable, each cut at 80 characters: enough for
a short token. Where the environment enters (the operator, the worker-free trigger, the
CLI, a default of `os.environ`), it is wrapped in `HiddenEnvironment`, a read-only snapshot
whose repr says only how many variables it holds.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping


class HiddenEnvironment(Mapping[str, str]):
    """A snapshot of environment variables that reads like a mapping and never shows one."""

    __slots__ = ("_variables",)

    def __init__(self, variables: Mapping[str, str]) -> None:
        self._variables = dict(variables)

    def __getitem__(self, name: str) -> str:
        return self._variables[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._variables)

    def __len__(self) -> int:
        return len(self._variables)

    def __repr__(self) -> str:
        return f"HiddenEnvironment({len(self._variables)} variables, not shown)"


def hidden(variables: Mapping[str, str]) -> HiddenEnvironment:
    """`variables` as a HiddenEnvironment; one already hidden is not copied again."""
    return variables if isinstance(variables, HiddenEnvironment) else HiddenEnvironment(variables)
