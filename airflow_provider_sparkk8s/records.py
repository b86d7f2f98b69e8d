"""`@record`: a frozen dataclass whose methods are shared functions, not code compiled per class.

`dataclasses.dataclass(frozen=True)` writes each class's `__init__`, `__repr__`, `__eq__`,
`__hash__`, `__setattr__` and `__delattr__` as source text and compiles it while the module
is imported: about 0.3 ms a class, and 36 such classes were 10 ms of every `sparkk8s-submit`
start. A record is still a dataclass (`fields`, `replace`, `asdict` and `is_dataclass` work on
it, and mypy reads it as a frozen one), but `dataclasses` only collects its fields, and the
six methods are the closures below, which behave as the generated ones do:
- `__init__` takes the fields positionally or by name, fills defaults and default factories,
  then calls `__post_init__` if the class has one;
- `__repr__` shows the fields that have `repr=True`, and `__rich_repr__` gives them to rich as
  it takes a dataclass's; `repr=False` keeps the class's own `__repr__` and adds neither;
- `__eq__` compares two instances of the same class field by field, `__hash__` hashes them;
- assigning or deleting a field raises `dataclasses.FrozenInstanceError`;
- with `slots=True`, the instance has `__slots__` and still pickles and copies.
A method the class body defines itself is kept, as dataclasses keeps it.
"""

from __future__ import annotations

import dataclasses
import operator

TYPE_CHECKING = False  # as typing's, which mypy reads by its name; typing stays unimported
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any, dataclass_transform
else:

    def dataclass_transform(**_: object) -> object:
        return lambda function: function


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field,))
def record(cls: Any = None, /, *, slots: bool = False, repr: bool = True) -> Any:
    """Decorate a class as a frozen record: `@record`, `@record(slots=True)`,
    `@record(repr=False)` (the class writes its own `__repr__`, e.g. to hide a secret)."""

    def wrap(cls: type) -> type:
        if not cls.__doc__:  # else dataclasses writes one through inspect.signature: 1-2 ms
            cls.__doc__ = f"{cls.__name__}({', '.join(vars(cls).get('__annotations__', ()))})"
        cls = dataclasses.dataclass(init=False, repr=False, eq=False, slots=slots)(cls)
        _add_methods(cls, dataclasses.fields(cls), with_repr=repr, slots=slots)
        return cls

    return wrap if cls is None else wrap(cls)


def _add_methods(
    cls: type, fields: tuple[dataclasses.Field[Any], ...], *, with_repr: bool, slots: bool
) -> None:
    own = cls.__dict__
    if "__init__" not in own:
        _attach(cls, "__init__", _init_for(cls, fields))
    if with_repr and "__repr__" not in own:
        shown = tuple(f.name for f in fields if f.repr)
        _attach(cls, "__repr__", _repr_for(shown))
        _attach(cls, "__rich_repr__", _rich_repr_for(shown))
    if "__eq__" not in own:
        _attach(cls, "__eq__", _eq_for(_values_for(tuple(f.name for f in fields if f.compare))))
    # A class that writes __eq__ but no __hash__ gets __hash__ = None from Python: not its own.
    if own.get("__hash__") is None and not ("__hash__" in own and "__eq__" not in own):
        hashed = tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash))
        _attach(cls, "__hash__", _hash_for(_values_for(hashed)))
    refuse_set, refuse_delete = _frozen_for(cls, frozenset(f.name for f in fields))
    _attach(cls, "__setattr__", refuse_set)
    _attach(cls, "__delattr__", refuse_delete)
    if slots:  # the default state of a slotted object is set back through __setattr__
        get_state, set_state = _state_for(tuple(f.name for f in fields))
        _attach(cls, "__getstate__", get_state)
        _attach(cls, "__setstate__", set_state)


def _attach(cls: type, name: str, method: Callable[..., Any]) -> None:
    method.__name__ = name
    method.__qualname__ = f"{cls.__qualname__}.{name}"
    setattr(cls, name, method)


def _values_for(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """The fields' values as a tuple: compared as dataclasses compares them (identity first)."""
    if len(names) > 1:
        return operator.attrgetter(*names)
    if names:
        get = operator.attrgetter(names[0])
        return lambda instance: (get(instance),)
    return lambda _: ()


def _init_for(cls: type, fields: tuple[dataclasses.Field[Any], ...]) -> Callable[..., None]:
    for f in fields:
        if not f.init:
            raise TypeError(f"{cls.__qualname__}.{f.name}: a record's fields are all init fields")
    names = tuple(f.name for f in fields)
    defaults = {f.name: f.default for f in fields if f.default is not dataclasses.MISSING}
    factories = {
        f.name: f.default_factory for f in fields if f.default_factory is not dataclasses.MISSING
    }
    post_init = getattr(cls, "__post_init__", None)
    set_field = object.__setattr__
    count = len(names)

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        if len(args) > count:
            raise TypeError(
                f"{cls.__qualname__}() takes {count} positional arguments"
                f" but {len(args)} were given"
            )
        for name, value in zip(names, args, strict=False):
            set_field(self, name, value)
        for name in names[len(args) :]:
            if name in kwargs:
                value = kwargs.pop(name)
            elif name in defaults:
                value = defaults[name]
            elif name in factories:
                value = factories[name]()
            else:
                raise TypeError(f"{cls.__qualname__}() missing required argument: {name!r}")
            set_field(self, name, value)
        if kwargs:
            name = next(iter(kwargs))
            if name in names:
                raise TypeError(f"{cls.__qualname__}() got multiple values for argument {name!r}")
            raise TypeError(f"{cls.__qualname__}() got an unexpected keyword argument {name!r}")
        if post_init is not None:
            self.__post_init__()

    return init


def _repr_for(names: tuple[str, ...]) -> Callable[[Any], str]:
    def show(self: Any) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{type(self).__qualname__}({shown})"

    return show


def _rich_repr_for(names: tuple[str, ...]) -> Callable[[Any], Iterator[tuple[str, Any]]]:
    """rich's protocol: the fields one by one, so a traceback's locals show a record as they
    show a dataclass, each value cut at rich's limits (Airflow logs tracebacks so). Without
    it, rich prints the whole `repr`: a task's environment once reached a log that way."""

    def rich_fields(self: Any) -> Iterator[tuple[str, Any]]:
        for name in names:
            yield name, getattr(self, name)

    return rich_fields


def _eq_for(values: Callable[[Any], tuple[Any, ...]]) -> Callable[[Any, object], Any]:
    def equal(self: Any, other: object) -> Any:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return values(self) == values(other)

    return equal


def _hash_for(values: Callable[[Any], tuple[Any, ...]]) -> Callable[[Any], int]:
    def hash_fields(self: Any) -> int:
        return hash(values(self))

    return hash_fields


def _frozen_for(
    cls: type, names: frozenset[str]
) -> tuple[Callable[[Any, str, Any], None], Callable[[Any, str], None]]:
    # As dataclasses: a subclass that is no record may set attributes that are no fields.
    def refuse_set(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        object.__setattr__(self, name, value)

    def refuse_delete(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        object.__delattr__(self, name)

    return refuse_set, refuse_delete


def _state_for(
    names: tuple[str, ...],
) -> tuple[Callable[[Any], list[Any]], Callable[[Any, list[Any]], None]]:
    def get_state(self: Any) -> list[Any]:
        return [getattr(self, name) for name in names]

    def set_state(self: Any, state: list[Any]) -> None:
        for name, value in zip(names, state, strict=True):
            object.__setattr__(self, name, value)

    return get_state, set_state
