"""The product gazetteer: well-known products, services, APIs, data sources and protocols, and what people use them
for, shipped as data (``data/products.txt``).

A description that names a product (in its title, its vendor's name or its vendor's URL) is known for what that
product does, which its own words often leave unsaid: a server titled "Strava" is about running and cycling
workouts, one titled "FRED" about unemployment and inflation figures. ``purposes`` returns those purpose words, which
the description's vector (registry/embeddings/indexer.py) and, at a low full-text weight, its text search read.

Matching works on whole words, never inside one ("fred" is not found in "frederick"): the words of a field, in lower
case, are compared with each name's words (a run of one to ``MAX_NAME_WORDS``, the longest first); a name of several
words also matches written as one (``homeassistant``, ``GoogleMaps``), ``mcp`` glued to a name is a word of its own
(``discordmcp``), and camel case is split where the field as written names nothing (``PlaywrightToolsAgent``). A
path-like name (``io.github.user/strava-mcp``) counts by its last segment, a namespace (``io.github.user``,
``com.stripe``) by its labels that do not say where it is published, and a code host's URL by its repository's name:
``github`` there says where the code lives, not what it does. A name that is also an ordinary word or very short
(marked ``~`` in the list, or of at most ``GUARDED_UP_TO`` letters) counts only where a field names that product and
nothing else, publishing boilerplate aside ("Linear", "Linear MCP server", ``mcp-linear``, the vendor "Linear Inc",
``https://linear.app``), not where the word is part of a longer name ("Linear Algebra Tools").
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

DATA = Path(__file__).with_name("data") / "products.txt"
#: Names of at most this many characters are guarded like the names marked ``~``.
GUARDED_UP_TO = 2
#: The longest name, in words.
MAX_NAME_WORDS = 4
#: Products whose purposes one description gets at most (the first named first).
MAX_PRODUCTS = 3
#: Words of names and vendors that say how something is published, what kind of wrapper it is or what language it is
#: written in, not which product it wraps.
BOILERPLATE = frozenset(
    {
        "a2a",
        "agent",
        "agents",
        "ai",
        "api",
        "apis",
        "bot",
        "client",
        "co",
        "com",
        "connector",
        "corp",
        "gmbh",
        "go",
        "inc",
        "integration",
        "java",
        "io",
        "js",
        "llc",
        "ltd",
        "mcp",
        "node",
        "official",
        "org",
        "plugin",
        "py",
        "python",
        "rs",
        "sdk",
        "server",
        "service",
        "the",
        "tool",
        "tools",
        "ts",
        "www",
    }
)
#: Products that are the conventions descriptions are published in: every MCP server is about MCP, which says
#: nothing about what it does.
CONVENTIONS = frozenset({"mcp", "a2a"})
#: Hosts whose URL paths name a repository or package: there the repository's name counts, not the host's.
CODE_HOSTS = frozenset(
    {"github.com", "gitlab.com", "bitbucket.org", "codeberg.org", "www.npmjs.com", "npmjs.com", "pypi.org"}
)
#: Labels of namespaces and domains (``io.github.user``, ``com.example``) that name where something is published.
HOSTING = frozenset({"io", "com", "org", "net", "dev", "app", "co", "www", "github", "gitlab", "bitbucket", "codeberg"})
_WORD = re.compile(r"[^\W_]+")
#: ``mcp`` at the start or end of a word, or inside it.
_GLUED = re.compile(r"(?<=.)mcp|mcp(?=.)")
#: Where a camel-case name changes words: a lower case letter or digit before a capital, a capital before a
#: capitalised word (``ModbusPLC`` → ``Modbus PLC``; ``HTTPServer`` → ``HTTP Server``).
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


@dataclasses.dataclass(frozen=True, slots=True)
class Product:
    #: The first name of the product in the list.
    name: str
    purpose: str


@dataclasses.dataclass(frozen=True, slots=True)
class Gazetteer:
    #: A name's words joined by a space (and, for names of several words, joined without one) → its product.
    free: dict[str, Product]
    #: The same for guarded names: counted only where a field names the product alone.
    guarded: dict[str, Product]
    #: A digest of the list: part of the vectors' model key, so that a change of the list embeds everything again.
    version: str
    #: The products each field text read names (see :func:`named_in`): vendors' names and URLs recur on many
    #: descriptions, and each write reads them.
    named: dict[str, tuple[Product, ...]] = dataclasses.field(default_factory=dict, compare=False)

    def __len__(self) -> int:
        return len({id(product) for product in (*self.free.values(), *self.guarded.values())})


def words_of(text: str) -> list[str]:
    """The words of a name or field, in lower case (``Home-Assistant`` → ``home``, ``assistant``)."""
    return [word.lower() for word in _WORD.findall(text)]


def _field_words(text: str) -> list[str]:
    """The words of a field as matching reads them: ``mcp`` glued to a name is a word of its own (``discordmcp``,
    ``unitymcpintegration``)."""
    return [part for word in words_of(text) for part in _GLUED.split(word) if part]


def _camel_words(text: str) -> list[str]:
    """The words of a field with its camel case split (``PlaywrightToolsAgent`` → ``playwright``, ``tools``,
    ``agent``): read only where the field as it is names nothing, since many products are spelled so (GitHub)."""
    return _field_words(_CAMEL.sub(" ", text))


def parse(lines: Iterable[str]) -> tuple[dict[str, Product], dict[str, Product]]:
    """(free names, guarded names) of the list's lines (see ``data/products.txt`` for the format)."""
    free: dict[str, Product] = {}
    guarded: dict[str, Product] = {}
    for line in lines:
        if not line.strip() or line.startswith("#"):
            continue
        spelled, product = _product_line(line)
        for name in spelled:
            parts = words_of(name)
            if not parts or len(parts) > MAX_NAME_WORDS:
                continue
            table = guarded if name.startswith("~") or len("".join(parts)) <= GUARDED_UP_TO else free
            for key in {" ".join(parts), "".join(parts)}:
                table.setdefault(key, product)
    return free, guarded


def _product_line(line: str) -> tuple[list[str], Product]:
    """The names a line of the list spells (``~`` kept) and its product."""
    names, _, purpose = line.partition(":")
    spelled = [name.strip() for name in names.split("|") if name.strip()]
    if not spelled or not purpose.strip():
        raise ValueError(f"a gazetteer line without names or purpose: {line!r}")
    return spelled, Product(spelled[0].lstrip("~"), purpose.strip())


@functools.cache
def gazetteer() -> Gazetteer:
    """The shipped gazetteer (read once per process)."""
    data = DATA.read_bytes()
    free, guarded = parse(data.decode("utf-8").splitlines())
    return Gazetteer(free, guarded, hashlib.sha256(data).hexdigest()[:12])


@functools.cache
def listed_purposes() -> tuple[str, ...]:
    """The purpose words of every product of the shipped list, in its order: what a need is compared with to find
    the products it is about (registry/discovery/expansion.py)."""
    lines = DATA.read_text(encoding="utf-8").splitlines()
    purposes = (line.partition(":")[2].strip() for line in lines if line.strip() and not line.startswith("#"))
    return tuple(purpose for purpose in purposes if purpose)


def _name_fields(title: str | None, vendor: str | None, url: str | None) -> Iterator[str]:
    """The text of each field that may name a product, as matching reads it."""
    for text in (title, vendor):
        if text:
            yield _name_in_text(text)
    if url:
        named = _name_in_url(url)
        if named is not None:
            yield named


def _name_in_text(text: str) -> str:
    """A title or vendor name as matching reads it: a path-like name by its last segment, a namespace or domain by
    its labels that are not hosting's, anything else as it is."""
    if " " in text.strip():
        return text
    if "/" in text:
        return text.rsplit("/", 1)[-1]
    if "." in text:
        return " ".join(word for word in words_of(text) if word not in HOSTING)
    return text


def _name_in_url(url: str) -> str | None:
    """A vendor URL as matching reads it: a code host's by its repository's name, any other by its host's name;
    None without a host."""
    parts = urlsplit(url if "//" in url else f"//{url}")
    host = (parts.hostname or "").lower()
    if host in CODE_HOSTS:
        return _repository_name(parts.path)
    return _host_name(host) if host else None


def _repository_name(path: str) -> str:
    """The last segment of a code host's URL path (``/redis/mcp-redis`` → ``mcp-redis``)."""
    segments = [segment for segment in path.split("/") if segment]
    return segments[-1] if segments else ""


def _host_name(host: str) -> str:
    """A host's labels without ``www`` and the top-level domain (``www.linear.app`` → ``linear``)."""
    labels = host.split(".")
    return " ".join(label for label in labels[:-1] if label != "www") if len(labels) > 1 else host


def _in_field(field: list[str], table: Gazetteer) -> Iterator[Product]:
    """A guarded name that is the field's whole name, then free names, the longest run first: words a longer name
    took are not read again (``google drive`` is Google Drive, not also ``google``)."""
    core = " ".join(word for word in field if word not in BOILERPLATE)
    if core in table.guarded:
        yield table.guarded[core]
    taken = [False] * len(field)
    for size in range(min(MAX_NAME_WORDS, len(field)), 0, -1):
        for start in range(len(field) - size + 1):
            run = field[start : start + size]
            if any(taken[start : start + size]) or all(word in BOILERPLATE for word in run):
                continue
            product = table.free.get(" ".join(run))
            if product is not None:
                taken[start : start + size] = [True] * size
                yield product


#: Field texts whose products a gazetteer keeps at most (then it starts again).
NAMED_KEPT = 10_000
#: Longest field text whose products are kept: names and URLs recur, long titles seldom do, and a bound on the
#: texts keeps a registrant's long titles from filling the process's memory.
NAMED_KEPT_LENGTH = 200


def _found(fields: Iterable[str], table: Gazetteer) -> Iterator[Product]:
    for text in fields:
        yield from named_in(text, table)


def named_in(text: str, table: Gazetteer) -> tuple[Product, ...]:
    """The products one field's ``text`` names, read once per text and table."""
    found = table.named.get(text)
    if found is None:
        found = tuple(product for product in _in_field(_field_words(text), table) if product.name not in CONVENTIONS)
        if not found:
            found = tuple(
                product for product in _in_field(_camel_words(text), table) if product.name not in CONVENTIONS
            )
        if len(text) <= NAMED_KEPT_LENGTH:
            if len(table.named) >= NAMED_KEPT:
                table.named.clear()
            table.named[text] = found
    return found


def products(title: str | None, vendor: str | None = None, url: str | None = None) -> list[Product]:
    """The products a description's title, vendor name and vendor URL name, the first named first."""
    found = dict.fromkeys(_found(_name_fields(title, vendor, url), gazetteer()))
    return list(found)[:MAX_PRODUCTS]


def purposes(title: str | None, vendor: str | None = None, url: str | None = None) -> str:
    """What the products a description names are used for, as one text ("" when it names none)."""
    return "; ".join(product.purpose for product in products(title, vendor, url))


def summary_purposes(summary: dict[str, object]) -> str:
    """``purposes`` of a summary as stored (its ``title`` and ``vendor``)."""
    vendor = summary.get("vendor")
    vendor = vendor if isinstance(vendor, dict) else {}
    title = summary.get("title")
    return purposes(
        title if isinstance(title, str) else None,
        vendor.get("name") if isinstance(vendor.get("name"), str) else None,
        vendor.get("url") if isinstance(vendor.get("url"), str) else None,
    )


__all__ = [
    "Gazetteer",
    "Product",
    "gazetteer",
    "listed_purposes",
    "parse",
    "products",
    "purposes",
    "summary_purposes",
    "words_of",
]
