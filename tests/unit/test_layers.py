"""The import direction between the packages of ``registry``: a package imports its own layer and the layers below,
never one above (read with ``ast``: imports at module level and in functions count; those under TYPE_CHECKING,
for annotations only, do not).

A new package (or top-level module) goes into the layer of what it may use: the test fails until it is placed.
"""

from __future__ import annotations

import ast
import collections
import functools
import re
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


#: What ``registry/http/`` takes from the store directly: the translation of a driver error into its domain error, for
#: an error that reached the problem handlers untranslated. Everything else handlers need of stored descriptions,
#: leases, owners and keys is an operation of the layer below them (``directory``, ``auth``).
HTTP_FROM_STORE = {("http/problems.py", "registry.store.database")}


def test_http_reaches_the_store_through_the_use_cases() -> None:
    reached = {
        (str(path.relative_to(ROOT)), module)
        for path in sorted((ROOT / "http").rglob("*.py"))
        for module in _imported(path)
        if module == "registry.store" or module.startswith("registry.store.")
    }
    assert reached <= HTTP_FROM_STORE, f"HTTP handlers reach into the store: {sorted(reached - HTTP_FROM_STORE)}"


#: SQL belongs to the store: outside ``registry/store/`` no module (the commands included, which reach the database
#: through the store too) imports a database library or the store's tables, or holds SQL in a string. Alembic's
#: scripts in ``migrations/`` lie outside ``registry/``.
DATABASE_LIBRARIES = {"sqlalchemy", "asyncpg"}
TABLES = "registry.store.tables"
#: A string that reads as SQL: a statement's first words, or a shape no other language here has (SPARQL's SELECT
#: is followed by a ``?variable``, HTTP methods stand alone).
SQL = re.compile(
    r"^\s*(SELECT\s+[^?\s]|SET\s+LOCAL\b|BEGIN\b|COMMIT\b|VACUUM\b|ANALYZE\b|NOTIFY\b|LISTEN\b)"
    r"|\b(SELECT\s.+\sFROM\s+[a-z_]|INSERT\s+INTO|UPDATE\s+[a-z_]+\s+SET|DELETE\s+FROM|pg_[a-z_]+\(|to_regclass\()",
    re.DOTALL,
)


def _sql_in(source: str) -> list[str]:
    """Imports of a database library and strings of SQL (docstrings aside) in ``source``."""
    tree = ast.parse(source)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [
                f"imports {alias.name}"
                for alias in node.names
                if alias.name.split(".")[0] in DATABASE_LIBRARIES or alias.name == TABLES
            ]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
            if node.module.split(".")[0] in DATABASE_LIBRARIES or TABLES in names:
                found.append(f"imports {node.module}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            found += [f"SQL {node.value[:60]!r}"] if SQL.search(node.value) else []
    return found


def test_no_sql_outside_the_store() -> None:
    outside = sorted(
        f"{path.relative_to(ROOT)}: {what}"
        for path in ROOT.rglob("*.py")
        if path.relative_to(ROOT).parts[0] != "store"
        for what in _sql_in(path.read_text())
    )
    assert not outside, "SQL belongs in registry/store/:\n" + "\n".join(outside)


def test_the_reader_of_sql_tells_it_from_sparql_http_and_prose() -> None:
    source = (
        '"""SELECT prints a table; SELECT x FROM t in a docstring is prose."""\n'
        "import sqlalchemy as sa\n"
        "from asyncpg import Record\n"
        "from registry.store import things\n"
        "from registry.store import tables\n"
        "PROBE = 'SELECT 1'\n"
        "LOCK = 'SELECT pg_try_advisory_lock($1)'\n"
        "QUERY = f'SELECT ?agent WHERE {{ GRAPH {graph} {{ ?agent a lmos:Agent }} }}'\n"
        "UPDATE = f'DROP SILENT GRAPH {graph} ; INSERT DATA {{ }}'\n"
        "METHODS = ('GET', 'DELETE')\n"
        "ROWS = 'DELETE FROM things WHERE id = $1'\n"
    )
    assert _sql_in(source) == [
        "imports sqlalchemy",
        "imports asyncpg",
        "imports registry.store",
        "SQL 'SELECT 1'",
        "SQL 'SELECT pg_try_advisory_lock($1)'",
        "SQL 'DELETE FROM things WHERE id = $1'",
    ]


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
