"""A record behaves as `dataclass(frozen=True)` does: each case runs on both, side by side."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import subprocess
import sys
from dataclasses import dataclass, field

import pytest

from airflow_provider_sparkk8s.records import record


@record
class Point:
    """A record with a default and a factory."""

    x: int
    y: int = 0
    tags: list[str] = field(default_factory=list)
    secret: str = field(default="", repr=False)


@dataclass(frozen=True)
class PointDataclass:
    """The same, as a frozen dataclass."""

    x: int
    y: int = 0
    tags: list[str] = field(default_factory=list)
    secret: str = field(default="", repr=False)


@record(slots=True)
class Slotted:
    """A slotted record."""

    name: str
    size: float = 1.0


@record(repr=False)
class OwnRepr:
    """A record whose class writes its own repr."""

    token: str

    def __repr__(self) -> str:
        return "OwnRepr(token=***)"


@record
class Checked:
    """A record that checks itself after its fields are set."""

    low: int
    high: int

    def __post_init__(self) -> None:
        if self.low > self.high:
            raise ValueError(f"low {self.low} > high {self.high}")


@pytest.mark.parametrize("cls", [Point, PointDataclass])
def test_init_defaults_factories_and_repr(cls: type) -> None:
    first = cls(1, secret="s")
    second = cls(x=1, y=0)
    assert (first.x, first.y, first.tags, first.secret) == (1, 0, [], "s")
    assert first.tags is not second.tags  # a factory runs once per instance
    assert repr(first) == f"{cls.__qualname__}(x=1, y=0, tags=[])"
    assert first != second  # secret differs
    assert cls(1, 2, ["a"]) == cls(x=1, y=2, tags=["a"])
    assert cls(1) != (1, 0, [], "")


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda cls: cls(), "missing"),
        (lambda cls: cls(1, 2, [], "s", 5), "positional"),
        (lambda cls: cls(1, x=2), "multiple values"),
        (lambda cls: cls(1, z=2), "unexpected keyword"),
    ],
)
@pytest.mark.parametrize("cls", [Point, PointDataclass])
def test_bad_arguments_are_type_errors(cls: type, call, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(TypeError, match=message):
        call(cls)


@pytest.mark.parametrize("cls", [Point, PointDataclass])
def test_frozen_and_hashed_by_fields(cls: type) -> None:
    point = cls(1, 2, secret="s")
    with pytest.raises(dataclasses.FrozenInstanceError, match="'x'"):
        point.x = 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        del point.y
    with pytest.raises(dataclasses.FrozenInstanceError):
        point.other = 1
    hashable = cls(1, 2, tags=("a",))  # type: ignore[arg-type]
    assert hash(hashable) == hash(cls(1, 2, tags=("a",)))  # type: ignore[arg-type]
    assert len({hashable, cls(1, 2, tags=("a",))}) == 1  # type: ignore[arg-type]


def test_nan_fields_compare_by_identity_first_as_dataclasses_do() -> None:
    nan = float("nan")
    assert Slotted("a", nan) == Slotted("a", nan)


def test_dataclasses_functions_work_on_a_record() -> None:
    point = Point(1, 2, ["a"], "s")
    assert dataclasses.is_dataclass(point)
    assert [f.name for f in dataclasses.fields(point)] == ["x", "y", "tags", "secret"]
    assert dataclasses.asdict(point) == {"x": 1, "y": 2, "tags": ["a"], "secret": "s"}
    moved = dataclasses.replace(point, y=5)
    assert (moved.x, moved.y, moved.secret) == (1, 5, "s")
    assert Point.__match_args__ == ("x", "y", "tags", "secret")
    assert Point.__init__.__qualname__ == "Point.__init__"


def test_slotted_record_pickles_and_copies() -> None:
    item = Slotted("disk", 2.5)
    assert not hasattr(item, "__dict__")
    assert pickle.loads(pickle.dumps(item)) == item
    assert copy.copy(item) == item
    assert copy.deepcopy(item) == item
    with pytest.raises(dataclasses.FrozenInstanceError):
        item.size = 3.0  # type: ignore[misc]


def test_plain_record_pickles_and_deep_copies() -> None:
    point = Point(1, 2, ["a"], "s")
    assert pickle.loads(pickle.dumps(point)) == point
    deep = copy.deepcopy(point)
    assert deep == point and deep.tags is not point.tags


def test_own_repr_is_kept_and_post_init_runs() -> None:
    assert repr(OwnRepr("t0ken")) == "OwnRepr(token=***)"
    assert Checked(1, 2).high == 2
    with pytest.raises(ValueError, match="low 3 > high 2"):
        Checked(3, 2)


def test_a_subclass_that_is_no_record_may_set_other_attributes() -> None:
    class Named(Point):
        pass

    named = Named(1)
    named.label = "free"  # type: ignore[attr-defined]
    assert named.label == "free"  # type: ignore[attr-defined]
    with pytest.raises(dataclasses.FrozenInstanceError):
        named.x = 2  # type: ignore[misc]


def test_a_field_that_is_not_an_init_field_is_refused() -> None:
    with pytest.raises(TypeError, match=r"Late\.late: a record's fields are all init fields"):

        @record
        class Late:
            """Refused."""

            late: int = field(default=0, init=False)


def test_records_need_no_typing_at_run_time() -> None:
    """`typing` takes about 2 ms to import; a record's module must not bring it in."""
    code = "import sys, airflow_provider_sparkk8s.records; print('typing' in sys.modules)"
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert loaded.stdout.strip() == "False", loaded.stderr


def test_a_record_without_a_docstring_is_named_by_its_fields() -> None:
    @record
    class Bare:
        first: int
        second: str = ""

    assert Bare.__doc__ == "Bare(first, second)"


def test_rich_shows_a_record_as_it_shows_a_dataclass_cut_at_its_limits() -> None:
    """Airflow logs tracebacks with their locals through rich, which cuts each value of a
    dataclass at its limits; a record gives rich its fields the same way."""
    from rich.pretty import pretty_repr

    tags = [f"tag-{n}" for n in range(30)]
    ours = pretty_repr(Point(1, 2, tags, "s3cr3t"), max_string=8, max_length=3)
    theirs = pretty_repr(PointDataclass(1, 2, tags, "s3cr3t"), max_string=8, max_length=3)
    assert ours == theirs.replace("PointDataclass", "Point")
    assert "tag-29" not in ours and "s3cr3t" not in ours


def test_a_record_with_its_own_repr_gives_rich_nothing_else() -> None:
    from rich.pretty import pretty_repr

    assert not hasattr(OwnRepr, "__rich_repr__")
    assert pretty_repr(OwnRepr("t0ken")) == "OwnRepr(token=***)"
