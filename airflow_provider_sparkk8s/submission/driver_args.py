"""The driver container's args, read back: which primary resource a running driver runs.

Spark's DriverCommandFeatureStep appends (after any args of a pod template)
`driver [--proxy-user U] --properties-file P --class C <primary resource> <app args...>`;
see `features/driver_command.driver_args`, which writes them.
"""

from __future__ import annotations

from collections.abc import Sequence

DRIVER_COMMAND = "driver"
# The options Spark writes between `driver` and the primary resource, each with one value.
OPTIONS_WITH_VALUE = ("--proxy-user", "--properties-file", "--class")


def main_resource_of(args: Sequence[str]) -> str | None:
    """The primary resource in a driver container's args; None when they hold no Spark
    driver command (a pod someone else made)."""
    for start, arg in enumerate(args):
        if arg != DRIVER_COMMAND:
            continue
        position = start + 1
        seen = set()
        while position + 1 < len(args) and args[position] in OPTIONS_WITH_VALUE:
            seen.add(args[position])
            position += 2
        if "--class" in seen and position < len(args):
            return args[position]
    return None
