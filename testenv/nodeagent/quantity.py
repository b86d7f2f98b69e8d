"""Kubernetes resource quantities ("896Mi", "1", "500m", "1.5G") as numbers (pure)."""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
            "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"),
            "P": Decimal("1e15"), "E": Decimal("1e18")}  # fmt: skip
_QUANTITY = re.compile(r"^([+-]?[0-9.]+)([eE][+-]?[0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?$")


def parse_quantity(text: str | float) -> Decimal:
    """The value of a quantity; raises ValueError naming the text when it is not one."""
    if isinstance(text, (int, float)):
        return Decimal(str(text))
    match = _QUANTITY.match(text.strip())
    if not match:
        raise ValueError(f"{text!r} is not a Kubernetes quantity")
    number, suffix = match.group(1), match.group(2) or ""
    try:
        value = Decimal(number)
    except InvalidOperation as error:
        raise ValueError(f"{text!r} is not a Kubernetes quantity") from error
    if suffix in _BINARY:
        return value * _BINARY[suffix]
    if suffix[:1] in ("e", "E"):
        return value * Decimal(10) ** int(suffix[1:])
    return value * _DECIMAL[suffix]


def ceil_units(text: str | float, divisor: str | float = 1) -> int:
    """`text` divided by `divisor`, rounded up, as the downward API reports resources."""
    return math.ceil(parse_quantity(text) / parse_quantity(divisor))
