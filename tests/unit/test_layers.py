"""The import direction between the packages of ``registry``: a package imports its own layer and the layers below,
never one above (read with ``ast``: imports at module level and in functions count; those under TYPE_CHECKING,
for annotations only, do not).

A new package (or top-level module) goes into the layer of what it may use: the test fails until it is placed.
"""

from __future__ import annotations

import ast
import collections
import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "registry"

#: Lowest first. A unit is a package of ``registry`` or a module at its top; in the packages that only gather
#: (``NAMESPACES``), each module or subpackage is a unit of its own.
LAYERS: list[set[str]] = [
    # Values, settings, the rules of descriptions and their RDF, SPARQL screening and engine: no I/O of their own.
    {
        "wire",
        "found",
        "rates",
        "tenancy",
        "tasks",
        "config",
        "redaction",
        "errors",
        "descriptions",
        "semantic",
        "sparql.query",
        "ops.logs",
        "ops.log_writer",
        "lifecycle",
    },
    # PostgreSQL: statements, the pool, the schema's state.
    {"store", "startup"},
    # Access rules, the projections of a description, the metrics every part records, the vectors of descriptions.
    {"auth", "projections", "ops.metrics", "embeddings"},
    # The change feed and its subscribers.
    {"events"},
    # Use cases and the processes beside the server.
    {"directory", "discovery", "conventions", "ops.health", "sparql.worker", "sparql.store"},
    # HTTP: routes, middleware, tracing of requests.
    {"http", "ops.tracing"},
    # The application assembled.
    {"app"},
    # Commands.
    {"cli", "__main__"},
]
#: The HTTP client (SDK) ships in the same package but is independent of the server: it uses the wire types only
#: (``wire``, and ``found`` for what a need finds), and only the commands use it.
CLIENT_USES = {"wire", "found"}
CLIENT_USERS = {"cli"}
RANK = {unit: rank for rank, units in enumerate(LAYERS) for unit in units}
#: Packages that gather units of different layers; their ``__init__`` holds a docstring only.
NAMESPACES = {"ops", "sparql"}


def _unit(module: str) -> str:
    parts = module.split(".")
    if len(parts) > 2 and parts[1] in NAMESPACES:
        return f"{parts[1]}.{parts[2]}"
    return parts[1] if len(parts) > 1 else "(registry)"


def _runtime_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """``node`` and what it holds, but the bodies of ``if TYPE_CHECKING:``."""
    yield node
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
            for other in child.orelse:
                yield from _runtime_nodes(other)
        else:
            yield from _runtime_nodes(child)


def _imported(path: Path) -> set[str]:
    """The ``registry.*`` modules the file at ``path`` imports."""
    module = ".".join(path.relative_to(ROOT.parent).with_suffix("").parts)
    package = module.removesuffix(".__init__") if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    return _imported_by(path.read_text(), package)


def _imported_by(source: str, package: str) -> set[str]:
    """The ``registry.*`` modules ``source``, a module of ``package``, imports."""
    found: set[str] = set()
    for node in _runtime_nodes(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            target = ".".join([*base, node.module] if node.module else base)
            if target == "registry" or target.removeprefix("registry.") in NAMESPACES or not node.module:
                found.update(f"{target}.{alias.name}" for alias in node.names)
            else:
                found.add(target)
    return {name for name in found if name.startswith("registry.")}


@functools.cache
def _edges() -> dict[str, set[tuple[str, str]]]:
    """unit → {(unit it imports, the importing file)}."""
    edges: dict[str, set[tuple[str, str]]] = collections.defaultdict(set)
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT)
        source = _unit(".".join(("registry", *relative.with_suffix("").parts)))
        for module in _imported(path):
            target = _unit(module)
            if target != source:
                edges[source].add((target, str(relative)))
    return edges


def test_every_package_has_a_layer() -> None:
    units = {path.name for path in ROOT.iterdir() if path.is_dir() and (path / "__init__.py").exists()}
    units |= {path.stem for path in ROOT.glob("*.py") if path.stem != "__init__"}
    for namespace in NAMESPACES:
        units.remove(namespace)
        units |= {
            f"{namespace}.{path.stem if path.suffix else path.name}"
            for path in (ROOT / namespace).iterdir()
            if (path.suffix == ".py" and path.stem != "__init__") or (path / "__init__.py").exists()
        }
    unplaced = units - RANK.keys() - {"client"}
    assert not unplaced, f"place {sorted(unplaced)} in a layer of tests/unit/test_layers.py (LAYERS)"


def test_no_layer_imports_one_above_it() -> None:
    upward = sorted(
        f"{where} ({source}) imports {target}"
        for source, imports in _edges().items()
        if source in RANK
        for target, where in imports
        if RANK.get(target, -1) > RANK[source] or (target == "client" and source not in CLIENT_USERS)
    )
    assert not upward, "imports against the layers:\n" + "\n".join(upward)


@pytest.mark.parametrize("namespace", sorted(NAMESPACES))
def test_a_namespace_gathers_and_imports_nothing(namespace: str) -> None:
    assert not _imported(ROOT / namespace / "__init__.py")


@pytest.mark.parametrize("higher", ["http", "auth", "ops.metrics", "discovery", "directory", "cli", "events", "app"])
def test_the_store_imports_nothing_above_it(higher: str) -> None:
    assert higher not in {target for target, _ in _edges()["store"]}


def test_the_client_uses_the_wire_types_only() -> None:
    assert {target for target, _ in _edges()["client"]} <= CLIENT_USES


def test_the_reader_of_imports_sees_imports_in_functions_and_skips_those_for_annotations() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "import registry.errors\n"
        "from registry.tenancy import EVERYTHING\n"
        "from . import database\n"
        "from ..semantic import rdf\n"
        "if TYPE_CHECKING:\n"
        "    from registry.auth.principal import Principal\n"
        "else:\n"
        "    from registry import wire\n"
        "def f():\n"
        "    from registry import metrics\n"
    )
    assert _imported_by(source, "registry.store") == {
        "registry.errors",
        "registry.tenancy",
        "registry.store.database",
        "registry.semantic",
        "registry.wire",
        "registry.metrics",
    }
