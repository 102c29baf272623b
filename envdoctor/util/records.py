"""`@record`: a frozen dataclass that is cheaper to define.

Before Python 3.13, `dataclass` compiles each method it writes with an exec() of its own: a frozen
dataclass takes 0.7 ms to define on a CI-like machine, a record 0.5 ms (bench/records.py), and
`envdoctor install` defines about fifty before it prints (issue 23 §4). `__repr__`, `__eq__` and
`__hash__` need nothing of the class but its field names, so here they are three shared functions
that read the fields through one `operator.attrgetter`; `dataclass` still writes `__init__` and the
frozen `__setattr__`/`__delattr__`.

A record behaves as `@dataclass(frozen=True)` does: `dataclasses.fields`, `replace` and `asdict`
work, instances are equal when their classes are the same and their fields are, the hash is the
fields' hash, the repr is `Name(field=value, ...)`, and a method the class defines itself wins.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from operator import attrgetter
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:

    def dataclass_transform(**_: object) -> Callable[[Any], Any]:
        return lambda decorated: decorated


_Class = TypeVar("_Class", bound=type)
_VALUES = "__record_values__"


def _values_of(names: tuple[str, ...]) -> Callable[[object], tuple[Any, ...]]:
    if len(names) >= 2:
        return attrgetter(*names)  # a tuple, read in C
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda instance: (one(instance),)
    return lambda instance: ()


def _repr(self: object) -> str:
    names = [f.name for f in dataclasses.fields(self)]  # type: ignore[arg-type]
    values = getattr(type(self), _VALUES)(self)
    inner = ", ".join(f"{name}={value!r}" for name, value in zip(names, values))
    return f"{type(self).__qualname__}({inner})"


def _eq(self: object, other: object) -> object:
    if other.__class__ is not self.__class__:
        return NotImplemented
    values = getattr(type(self), _VALUES)
    return bool(values(self) == values(other))


def _hash(self: object) -> int:
    return hash(getattr(type(self), _VALUES)(self))


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, dataclasses.Field))
def record(cls: _Class) -> _Class:
    """The class as a frozen dataclass, with the shared repr, equality and hash."""
    own = dict(cls.__dict__)
    made: Any = dataclasses.dataclass(frozen=True, repr=False, eq=False)(cls)
    setattr(made, _VALUES, _values_of(tuple(f.name for f in dataclasses.fields(made))))
    if "__repr__" not in own:
        made.__repr__ = _repr
    if "__eq__" not in own:
        made.__eq__ = _eq
    # As dataclass decides it: a class body with __eq__ and no __hash__ gets __hash__ = None
    # from Python itself, which is not an explicit hash.
    explicit_hash = "__hash__" in own and not (own["__hash__"] is None and "__eq__" in own)
    if not explicit_hash:
        made.__hash__ = _hash
    return made  # type: ignore[no-any-return]
