"""Reading answers: JSON bodies, lists decoded item by item, watch-stream lines.

A list decoded with a view (`each_item`) keeps only what the view returns of each item, so
a list of 10,000 pods never exists whole as objects. `decode_list_steps` does the same in
steps, so the async sender can let its event loop run between them.
"""

from __future__ import annotations

import json as jsonlib
import re
from collections.abc import Generator, Mapping

from airflow_provider_sparkk8s.errors import KubeApiError
from airflow_provider_sparkk8s.kube.request import ItemView, KubeRequest

TYPE_CHECKING = False  # typing's, without importing typing (2 ms of the CLI's start)
if TYPE_CHECKING:
    from typing import Any

# What a list keeps of each item: a slimmer mapping, or a record (a metadata list's versions).
_DECODER = jsonlib.JSONDecoder()
_WHITESPACE = re.compile(r"[ \t\n\r]*")


ITEMS_PER_STEP = 200  # a 10,000-pod list lets an event loop serve others 50 times


def decode_json(
    request: KubeRequest, body: bytes, each_item: ItemView | None = None
) -> dict[str, Any]:
    """The answer's JSON. With `each_item`, a list's `items` are decoded one at a time and
    only `each_item(item)` is kept: a list of 10,000 pods never exists whole as objects,
    whose memory the allocator would keep (it cannot hand back a page that one small
    survivor still uses)."""
    if each_item is not None:
        steps = decode_list_steps(request, body, each_item)
        while (decoded := next_step(steps)) is None:
            pass
        return decoded
    if not body:
        return {}
    try:
        parsed = jsonlib.loads(body)
    except ValueError:
        raise _invalid(request) from None
    return parsed if isinstance(parsed, dict) else {"items": parsed}


def decode_list_steps(
    request: KubeRequest, body: bytes, each_item: ItemView
) -> Generator[None, None, dict[str, Any]]:
    """`decode_json` with `each_item`, in steps: it pauses after every `ITEMS_PER_STEP`
    items, so the async sender lets its event loop deliver other events between them (a
    large list decoded in one go held every trigger's event back for a second or more)."""
    if not body:
        return {}
    try:
        return (yield from _decode_list(body.decode(), each_item))
    except (ValueError, IndexError, TypeError):
        raise _invalid(request) from None


def next_step(steps: Generator[None, None, dict[str, Any]]) -> dict[str, Any] | None:
    """Runs one step of `decode_list_steps`: the decoded answer once the last step is done,
    else None (the caller may let others run before the next step)."""
    try:
        next(steps)
    except StopIteration as done:
        decoded: dict[str, Any] = done.value
        return decoded
    return None


def decode_watch_line(line: str) -> dict[str, Any] | None:
    """One watch event from one line of the stream; None for a keep-alive blank line."""
    return jsonlib.loads(line) if line.strip() else None


def _invalid(request: KubeRequest) -> KubeApiError:
    return KubeApiError(
        0,
        "InvalidResponse",
        "the API server answered with something that is not JSON",
        method=request.method,
        path=request.path,
    )


def _decode_list(text: str, each_item: ItemView) -> Generator[None, None, dict[str, Any]]:
    """A JSON object whose `items` array goes through `each_item` as it is read."""
    index = _skip(text, _expect(text, _skip(text, 0), "{"))
    decoded: dict[str, Any] = {}
    while text[index] != "}":
        key, index = _DECODER.raw_decode(text, index)
        if not isinstance(key, str):
            raise TypeError("an object key that is not a string")
        index = _skip(text, _expect(text, _skip(text, index), ":"))
        if key == "items" and text[index] == "[":
            decoded[key], index = yield from _decode_items(text, index, each_item)
        else:
            decoded[key], index = _DECODER.raw_decode(text, index)
        index = _skip(text, index)
        if text[index] != "}":
            index = _skip(text, _expect(text, index, ","))
            _expect(text, index, '"')
    if text[_skip(text, index + 1) :]:
        raise ValueError("data after the JSON object")
    return decoded


def _decode_items(
    text: str, index: int, each_item: ItemView
) -> Generator[None, None, tuple[list[Any], int]]:
    items: list[Any] = []
    index = _skip(text, index + 1)
    while text[index] != "]":
        item, index = _DECODER.raw_decode(text, index)
        items.append(each_item(item) if isinstance(item, Mapping) else item)
        del item  # the whole object goes now, before the next one is read
        if len(items) % ITEMS_PER_STEP == 0:
            yield
        index = _skip(text, index)
        if text[index] != "]":
            index = _skip(text, _expect(text, index, ","))
            if text[index] == "]":
                raise ValueError(f"a trailing ',' at {index}")
    return items, index + 1


def _skip(text: str, index: int) -> int:
    match = _WHITESPACE.match(text, index)
    return match.end() if match else index


def _expect(text: str, index: int, char: str) -> int:
    if text[index] != char:
        raise ValueError(f"expected {char!r} at {index}")
    return index + 1
