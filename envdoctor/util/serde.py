"""Typed dataclasses <-> JSON-able data, so snapshots round-trip without untyped dicts in between."""

from __future__ import annotations

import dataclasses
import enum
import math
import types
import typing
from collections.abc import Mapping
from functools import cache
from typing import Any, TypeVar, Union

T = TypeVar("T")
# Facts are counts, sizes and versions: every integer fits 64 bits, as in the JSON Schemas and
# in every other language that reads a snapshot.
INT_MIN, INT_MAX = -(2**63), 2**63 - 1
# The only integer fields that may be below zero: exit codes (-N is signal N on POSIX) and
# Windows error codes (HRESULTs read as signed). Every other integer is a count, size, index, line,
# version or signal number, so a negative one is a corrupt or hand-edited snapshot.
SIGNED_FIELDS = frozenset({"exit_code", "winerror", "returncode"})


def may_be_negative(field_name: str) -> bool:
    return field_name in SIGNED_FIELDS


class DataError(ValueError):
    """Data that does not have the shape a dataclass expects; the message names where."""


def to_data(value: object) -> Any:
    """Turn dataclasses, enums and tuples into plain JSON-able values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_data(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (list, tuple)):
        return [to_data(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): to_data(v) for k, v in value.items()}
    return value


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def from_data(cls: type[T], data: object, where: str = "$") -> T:
    """Build `cls` from plain data, checking every field's type; raises DataError naming the path."""
    return typing.cast(T, _convert(cls, data, where))


def _convert(tp: Any, data: object, where: str) -> Any:
    if tp is Any or tp is object:
        return data
    origin = typing.get_origin(tp)
    if origin is Union or (hasattr(types, "UnionType") and origin is types.UnionType):
        args = typing.get_args(tp)
        if data is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _convert(arg, data, where)
            except DataError as exc:
                errors.append(str(exc))
        raise DataError(errors[0] if len(errors) == 1 else f"{where}: no variant of {tp} fits")
    if origin is tuple:
        if not isinstance(data, list):
            raise DataError(f"{where}: expected a list, got {_kind(data)}")
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_convert(args[0], v, f"{where}[{i}]") for i, v in enumerate(data))
        if len(args) != len(data):
            raise DataError(f"{where}: expected {len(args)} items, got {len(data)}")
        return tuple(_convert(a, v, f"{where}[{i}]") for i, (a, v) in enumerate(zip(args, data)))
    if origin in (dict, Mapping, typing.Mapping) or tp is dict:
        if not isinstance(data, dict):
            raise DataError(f"{where}: expected an object, got {_kind(data)}")
        args = typing.get_args(tp)
        value_type = args[1] if len(args) == 2 else Any
        return {str(k): _convert(value_type, v, f"{where}.{k}") for k, v in data.items()}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(data, dict):
            raise DataError(f"{where}: expected an object, got {_kind(data)}")
        hints = _hints(tp)
        kwargs = {}
        for f in dataclasses.fields(tp):
            if not f.init:
                continue
            if f.name in data:
                value = _convert(hints[f.name], data[f.name], f"{where}.{f.name}")
                negative = isinstance(value, int) and not isinstance(value, bool) and value < 0
                if negative and not may_be_negative(f.name):
                    raise DataError(f"{where}.{f.name}: expected a count, size or index >= 0, got {value}")
                kwargs[f.name] = value
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise DataError(f"{where}: missing field {f.name!r}")
        return tp(**kwargs)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(data)
        except ValueError:
            allowed = ", ".join(str(m.value) for m in tp)
            raise DataError(f"{where}: {data!r} is not one of {allowed}") from None
    if tp is float:
        if isinstance(data, (int, float)) and not isinstance(data, bool):
            try:
                number = float(data)
            except OverflowError:  # a 400-digit integer
                number = math.inf
            if not math.isfinite(number):
                raise DataError(f"{where}: expected a finite number, got {_show(data)}")
            return number
        raise DataError(f"{where}: expected a number, got {_kind(data)}")
    if tp is int:
        if isinstance(data, int) and not isinstance(data, bool):
            if not INT_MIN <= data <= INT_MAX:
                raise DataError(f"{where}: expected a 64-bit integer, got {_show(data)}")
            return data
        raise DataError(f"{where}: expected an integer, got {_kind(data)}")
    if tp in (str, bool):
        if isinstance(data, tp):
            return data
        raise DataError(f"{where}: expected {tp.__name__}, got {_kind(data)}")
    if tp is type(None):
        if data is None:
            return None
        raise DataError(f"{where}: expected null, got {_kind(data)}")
    raise DataError(f"{where}: unsupported type {tp!r}")


def _show(number: object) -> str:
    text = str(number)
    return text if len(text) <= 24 else f"a number of {len(text)} digits"


def _kind(data: object) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(data), type(data).__name__
    )
