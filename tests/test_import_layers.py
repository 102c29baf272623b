"""The layers hold (issue 23): every import of every module, read statically (ast), at the top,
inside functions and under TYPE_CHECKING alike, makes a graph with no circle, and the nevers hold:

- knowledge is a leaf: it imports nothing of envdoctor's but itself and the bottom (model, paths,
  util);
- the planner (install's pure modules) imports no update/, probes/ or host/;
- rules and renderers import no host/;
- no module takes another module's private (_underscored) names;
- the package facade (envdoctor/__init__) is imported by nobody inside envdoctor;
- the top level holds at most 20 modules, and the command line lives in envdoctor/cli/.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

PACKAGE = Path(__file__).resolve().parent.parent / "envdoctor"
CHILD = "envdoctor.child"  # stdlib-only scripts run in the examined interpreter: outside the graph

# The planner's pure modules: (target machine, sources, knowledge) -> plan.
PLANNER = tuple(
    f"envdoctor.install.{name}"
    for name in ("plan", "routes", "sources", "commands", "vendors", "request", "target")
)
BOTTOM = ("envdoctor.model", "envdoctor.paths", "envdoctor.util", "envdoctor.version", "envdoctor.errors")


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    target: str  # the envdoctor module imported (resolved to a module, not a name in it)
    names: tuple[str, ...]  # the names taken from it (`from target import a, b`)
    line: int


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache
def modules() -> dict[str, Path]:
    found = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {m: p for m, p in found.items() if not m.startswith(CHILD)}


def _resolve(name: str) -> str | None:
    known = modules()
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


@functools.cache
def imports() -> tuple[Import, ...]:
    found: list[Import] = []
    for module, path in modules().items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    target = _resolve(alias.name) if alias.name.startswith("envdoctor") else None
                    if target and target != module:
                        found.append(Import(module, target, (), node.lineno))
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package
                    for _ in range(node.level - 1):
                        anchor = anchor.rpartition(".")[0]
                    base = f"{anchor}.{base}" if base else anchor
                if not base.startswith("envdoctor"):
                    continue
                for alias in node.names:
                    submodule = f"{base}.{alias.name}"
                    if submodule in modules():  # `from envdoctor.cli import fix`: the module itself
                        found.append(Import(module, submodule, (), node.lineno))
                        continue
                    target = _resolve(base)
                    if target and target != module:
                        found.append(Import(module, target, (alias.name,), node.lineno))
    return tuple(found)


def _circles() -> list[list[str]]:
    graph: dict[str, set[str]] = {m: set() for m in modules()}
    for edge in imports():
        graph[edge.module].add(edge.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return circles


def _within(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def _violations(importers: tuple[str, ...], forbidden: tuple[str, ...]) -> list[str]:
    return sorted(
        f"{e.module}:{e.line} imports {e.target}"
        for e in imports()
        if _within(e.module, importers) and _within(e.target, forbidden)
    )


def test_no_module_imports_its_way_back_to_itself() -> None:
    assert _circles() == []


def test_knowledge_is_a_leaf() -> None:
    stray = sorted(
        f"{e.module}:{e.line} imports {e.target}"
        for e in imports()
        if _within(e.module, ("envdoctor.knowledge",))
        and not _within(e.target, ("envdoctor.knowledge", *BOTTOM))
    )
    assert stray == []


def test_the_planner_is_a_pure_function_of_its_inputs() -> None:
    forbidden = (
        "envdoctor.update",
        "envdoctor.probes",
        "envdoctor.host",
        "envdoctor.engine",
        "envdoctor.target",
    )
    assert _violations(PLANNER, forbidden) == []


def test_rules_and_renderers_never_import_the_host() -> None:
    assert _violations(("envdoctor.rules", "envdoctor.render"), ("envdoctor.host",)) == []


def test_the_bottom_imports_nothing_above_it() -> None:
    stray = sorted(
        f"{e.module}:{e.line} imports {e.target}"
        for e in imports()
        if _within(e.module, BOTTOM) and not _within(e.target, BOTTOM)
    )
    assert stray == []


def test_no_module_takes_another_modules_private_names() -> None:
    taken = sorted(
        f"{e.module}:{e.line} takes {e.target}.{name}"
        for e in imports()
        for name in e.names
        if name.startswith("_") and not name.startswith("__")
    )
    assert taken == []


def test_no_module_reaches_into_a_private_attribute_of_another() -> None:
    """`console._Printer` after `from envdoctor.render import console`: the same reach, spelled
    as an attribute."""
    reached: list[str] = []
    for module, path in modules().items():
        aliases = {
            (alias.asname or alias.name): f"{node.module}.{alias.name}"
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("envdoctor")
            for alias in node.names
            if f"{node.module}.{alias.name}" in modules()
        }
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                reached.append(f"{module}:{node.lineno} reaches {aliases[node.value.id]}.{node.attr}")
    assert sorted(reached) == []


def test_nothing_inside_imports_the_package_facade() -> None:
    assert sorted(f"{e.module}:{e.line}" for e in imports() if e.target == "envdoctor") == []


def test_the_top_level_is_short_and_the_command_line_has_its_package() -> None:
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 20, top
    assert (PACKAGE / "cli" / "__init__.py").exists()
    assert not [name for name in top if name.startswith("cli")], top


def test_the_import_reader_sees_the_imports_it_should() -> None:
    """The reader resolves the forms the package uses, so an empty violation list means something."""
    edges = {(e.module, e.target) for e in imports()}
    assert ("envdoctor.cli.root", "envdoctor.cli.check") in edges  # from envdoctor.cli import check as ...
    assert ("envdoctor.install.plan", "envdoctor.install.target") in edges  # from ... import Name
    assert ("envdoctor.engine", "envdoctor.util.threads") in edges
