"""`@record` behaves as `@dataclass(frozen=True)` does, side by side with one."""

from __future__ import annotations

import ast
import dataclasses
import pickle
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from envdoctor.util.records import record


@record
class Point:
    x: int
    y: int = 0
    tags: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class PointDataclass:
    x: int
    y: int = 0
    tags: tuple[str, ...] = field(default_factory=tuple)


@record
class One:
    only: str


@record
class Empty:
    pass


@record
class Point3(Point):
    z: int = 0


@record
class OwnMethods:
    name: str

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OwnMethods) and self.name.lower() == other.name.lower()

    def __repr__(self) -> str:
        return f"<{self.name}>"


@record
class OwnHash:
    name: str

    def __hash__(self) -> int:
        return 7


def test_fields_init_and_defaults_are_a_dataclass_s() -> None:
    assert [f.name for f in dataclasses.fields(Point)] == [f.name for f in dataclasses.fields(PointDataclass)]
    p = Point(1, tags=("a",))
    assert (p.x, p.y, p.tags) == (1, 0, ("a",))
    assert dataclasses.replace(p, y=5) == Point(1, 5, ("a",))
    assert dataclasses.asdict(p) == dataclasses.asdict(PointDataclass(1, tags=("a",)))
    assert Point.__match_args__ == PointDataclass.__match_args__


def test_frozen() -> None:
    p = Point(1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 2  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del p.x  # type: ignore[misc]


def test_repr_is_a_dataclass_s() -> None:
    assert repr(Point(1, 2, ("a",))) == repr(PointDataclass(1, 2, ("a",))).replace("PointDataclass", "Point")
    assert repr(One("s")) == "One(only='s')"
    assert repr(Empty()) == "Empty()"
    assert repr(Point3(1, z=3)) == "Point3(x=1, y=0, tags=(), z=3)"


def test_equality_is_by_fields_of_the_same_class() -> None:
    assert Point(1, 2) == Point(1, 2)
    assert Point(1, 2) != Point(1, 3)
    assert One("a") == One("a") and One("a") != One("b")
    assert Empty() == Empty()
    assert Point(1, 2) != PointDataclass(1, 2)
    assert Point3(1, 2) != Point(1, 2) and Point(1, 2) != Point3(1, 2)
    assert Point(1) != (1, 0, ())


def test_hash_is_the_fields_hash() -> None:
    assert hash(Point(1, 2)) == hash(Point(1, 2)) == hash((1, 2, ()))
    assert hash(One("a")) == hash(("a",))
    assert len({Point(1), Point(1), Point(2)}) == 2
    with pytest.raises(TypeError):
        hash(Point(1, tags=[1]))  # type: ignore[arg-type]


def test_a_method_the_class_defines_wins() -> None:
    assert OwnMethods("A") == OwnMethods("a")
    assert repr(OwnMethods("A")) == "<A>"
    # An __eq__ of its own and no __hash__: the fields' hash, as dataclass gives it.
    assert hash(OwnMethods("A")) == hash(("A",))
    assert hash(OwnHash("x")) == 7


def test_pickles() -> None:
    p = Point3(1, 2, ("t",), 4)
    assert pickle.loads(pickle.dumps(p)) == p


def test_envdoctor_defines_its_frozen_types_as_records() -> None:
    """One way to write a fact type, so start-up stays what bench/records.py measures."""
    package = Path(__file__).resolve().parent.parent / "envdoctor"
    found = []
    for path in sorted(package.rglob("*.py")):
        if "child" in path.relative_to(package).parts:
            continue  # the child scripts run in the target interpreter and import nothing of ours
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                for deco in node.decorator_list:
                    frozen = isinstance(deco, ast.Call) and any(
                        k.arg == "frozen" and isinstance(k.value, ast.Constant) and k.value.value is True
                        for k in deco.keywords
                    )
                    if frozen:
                        found.append(f"{path.relative_to(package)}:{node.lineno} {node.name}")
    assert found == [], "use @record (envdoctor.util.records) for these: " + ", ".join(found)
