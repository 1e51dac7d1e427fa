"""Read-only SPARQL 1.1 queries over the index, with a timeout, a result cap and no federation by default.

oxigraph would execute ``SERVICE`` by calling the endpoint and crashes on very deeply nested queries, so every
query is screened first by a small tokenizer (comments, strings and IRIs set aside): updates are refused,
``SERVICE`` only reaches allow-listed IRIs, and bracket nesting is bounded.

Queries run in a small dedicated thread pool (oxigraph releases the GIL), never on an event loop. Results are
pulled one by one and the deadline is checked between them, which stops any query that streams. oxigraph cannot
interrupt a single long step (an aggregate over a huge join): in the server this engine runs inside the query
worker process, which is killed and replaced when a query outlives its time (:mod:`registry.sparql.worker`);
used in-process (``abandon_on_timeout``), such a query is answered 503 while its thread runs to its end.
``concurrency`` queries run at once; up to ``queue`` more wait for a thread; beyond, new ones are told to retry
(503 with Retry-After).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import functools
import re
import threading
import time
from collections.abc import Callable, Sequence
from typing import IO, Any, Protocol, cast
from urllib.parse import urljoin

import msgspec
import pyoxigraph as ox

from registry.descriptions.model import A2A_NAMESPACE, MCP_NAMESPACE
from registry.errors import BadGateway, BadRequest, NotAcceptable, ServiceUnavailable
from registry.semantic.expansion import LMOS_IRI

PREFIXES = {
    "td": "https://www.w3.org/2019/wot/td#",
    "hctl": "https://www.w3.org/2019/wot/hypermedia#",
    "htv": "http://www.w3.org/2011/http#",
    "wotsec": "https://www.w3.org/2019/wot/security#",
    "jsonschema": "https://www.w3.org/2019/wot/json-schema#",
    "dct": "http://purl.org/dc/terms/",
    "discovery": "https://www.w3.org/2022/wot/discovery-ontology#",
    "lmos": LMOS_IRI,
    "a2a": A2A_NAMESPACE,
    "mcp": MCP_NAMESPACE,
    "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
    "xsd": "http://www.w3.org/2001/XMLSchema#",
}

MAX_QUERY_CHARS = 100_000
MAX_NESTING = 64
#: Largest answer (serialised SELECT results) kept in memory.
MAX_ANSWER_BYTES = 64 * 2**20

_UPDATE_KEYWORDS = frozenset({"INSERT", "DELETE", "LOAD", "CLEAR", "CREATE", "DROP", "COPY", "MOVE", "ADD", "WITH"})
_TOKENS = re.compile(
    r"""
    (?P<comment>\#[^\n\r]*)
  | (?P<string>'''(?:[^'\\]|\\.|'(?!''))*'''|\"\"\"(?:[^"\\]|\\.|"(?!""))*\"\"\"
               |'(?:[^'\\\n\r]|\\.)*'|"(?:[^"\\\n\r]|\\.)*")
  | (?P<iri><[^<>"{}|^`\\\x00-\x20]*>)
  | (?P<word>[?$]?[^\W\d][\w\-.]*(?::[\w\-.:%]*)?|:[\w\-.:%]*)
  | (?P<open>[({\[])
  | (?P<close>[)}\]])
  | (?P<other>\S)
    """,
    re.VERBOSE | re.DOTALL,
)
_ESCAPE = re.compile(r"\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})")
_POSITION = re.compile(r"error at (\d+):(\d+)")
_DECLARED_PREFIX = re.compile(r"\bPREFIX\s+([\w\-.]*):", re.IGNORECASE)

SELECT_TYPES = {
    "application/json": ox.QueryResultsFormat.JSON,
    "application/sparql-results+json": ox.QueryResultsFormat.JSON,
    "application/sparql-results+xml": ox.QueryResultsFormat.XML,
    "application/xml": ox.QueryResultsFormat.XML,
    "text/csv": ox.QueryResultsFormat.CSV,
    "text/tab-separated-values": ox.QueryResultsFormat.TSV,
}
#: SPARQL 1.1's CSV and TSV results formats define no form for ASK: its answer is JSON or XML.
BOOLEAN_TYPES = {
    media_type: result_format
    for media_type, result_format in SELECT_TYPES.items()
    if result_format not in (ox.QueryResultsFormat.CSV, ox.QueryResultsFormat.TSV)
}
GRAPH_TYPES = {
    "application/ld+json": ox.RdfFormat.JSON_LD,
    "text/turtle": ox.RdfFormat.TURTLE,
    "application/n-triples": ox.RdfFormat.N_TRIPLES,
    "application/rdf+xml": ox.RdfFormat.RDF_XML,
    "application/n-quads": ox.RdfFormat.N_QUADS,
    "application/trig": ox.RdfFormat.TRIG,
}


class QueryTimeout(ServiceUnavailable):
    pass


@dataclasses.dataclass(frozen=True, slots=True)
class Answer:
    content: bytes
    media_type: str


class SparqlBackend(Protocol):
    """What answers ``/search/sparql``: the local query worker (:class:`registry.sparql.worker.client.QueryWorker`)
    or an external store (:class:`registry.sparql.store.endpoint.StoreEndpoint`)."""

    @property
    def ready(self) -> bool: ...

    @property
    def idle(self) -> bool:
        """Whether the backend waits for its first query to start (and holds no figures until then)."""
        ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    @property
    def unready_counts(self) -> bool:
        """Whether being unready takes the replica out of rotation (``/readyz`` 503), or only degrades it."""
        ...

    def unready_reason(self) -> str | None:
        """Why queries cannot be answered now (None when they can): for ``/readyz``."""

    async def query(
        self, query: str, accept: str, default_graphs: list[str], named_graphs: list[str], client: str = ""
    ) -> Answer:
        """``client``: who the query counts against for a fair share of the backend (a principal or an address)."""
        ...

    async def stats(self) -> dict[str, Any]:
        """What the copy holds: ``indexPosition`` (the change position it reflects) at least."""


@dataclasses.dataclass(frozen=True, slots=True)
class Screened:
    """What screening learnt of a query that may run."""

    #: It has a dataset clause (``FROM`` / ``FROM NAMED``): its default graph is what it names, not the union.
    names_dataset: bool
    #: The IRIs of its ``FROM`` and ``FROM NAMED`` clauses, for a store that must be given them as the protocol's
    #: ``default-graph-uri`` / ``named-graph-uri`` parameters.
    default_graphs: tuple[str, ...] = ()
    named_graphs: tuple[str, ...] = ()
    #: It calls other endpoints (``SERVICE``): a failure to reach one is the endpoint's, not the query's.
    federated: bool = False


def screen(query: str, service_allowlist: Sequence[str] = ()) -> Screened:
    """Refuse what must never run: updates, unlisted SERVICE endpoints, nesting deep enough to crash the parser."""
    if len(query) > MAX_QUERY_CHARS:
        raise BadRequest(f"The query is longer than {MAX_QUERY_CHARS} characters")
    unescaped = _unescaped(query)
    names_dataset = federated = False
    dataset: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
    for text in {query, unescaped}:
        tokens = _tokens(text)
        if text == unescaped:
            dataset = _dataset_clauses(tokens)
        names, calls = _scan(tokens, service_allowlist)
        names_dataset, federated = names_dataset or names, federated or calls
    return Screened(names_dataset, *dataset, federated=federated)


_NESTING = {"open": 1, "close": -1}


def _scan(tokens: list[tuple[str | None, str]], service_allowlist: Sequence[str]) -> tuple[bool, bool]:
    """Whether the tokens start a dataset clause (``FROM``) and call other endpoints (``SERVICE``), refusing deep
    nesting, updates and unlisted endpoints where they first occur."""
    names_dataset = federated = False
    depth = 0
    for position, (kind, value) in enumerate(tokens):
        depth += _NESTING.get(kind or "", 0)
        if depth > MAX_NESTING:
            raise BadRequest(f"The query nests brackets more than {MAX_NESTING} levels deep")
        keyword = _keyword(kind, value)
        _refuse_update(keyword)
        if keyword == "SERVICE":
            _check_service(tokens[position + 1 : position + 3], service_allowlist)
            federated = True
        names_dataset = names_dataset or keyword == "FROM"  # only ever the start of a dataset clause
    return names_dataset, federated


def _keyword(kind: str | None, value: str) -> str:
    """The keyword a token may be, upper-cased: a word that is neither a variable nor a prefixed name ("" if not)."""
    return value.upper() if kind == "word" and ":" not in value and value[0] not in "?$" else ""


def _refuse_update(keyword: str) -> None:
    if keyword in _UPDATE_KEYWORDS:
        raise BadRequest(
            f"This SPARQL endpoint is read-only: {keyword} (SPARQL Update) is not accepted; "
            "descriptions are changed through the /things API"
        )


def _unescaped(query: str) -> str:
    """``query`` with its ``\\u``/``\\U`` escapes replaced by the characters they stand for (invalid ones dropped)."""
    return _ESCAPE.sub(lambda m: chr(int(m.group(1) or m.group(2), 16)) if _valid(m) else "", query)


def _tokens(text: str) -> list[tuple[str | None, str]]:
    """(kind, text) of each token of a query, comments left out."""
    return [(m.lastgroup, m.group()) for m in _TOKENS.finditer(text) if m.lastgroup != "comment"]


def query_dataset(query: str) -> tuple[list[str], list[str]] | None:
    """The graphs the query's ``FROM`` / ``FROM NAMED`` clauses name (default, named), or None without them."""
    screened = screen_dataset(query)
    return (list(screened.default_graphs), list(screened.named_graphs)) if screened.names_dataset else None


def screen_dataset(query: str) -> Screened:
    tokens = _tokens(_unescaped(query))
    default, named = _dataset_clauses(tokens)
    names = any(kind == "word" and value.upper() == "FROM" for kind, value in tokens)
    return Screened(names, default, named)


def _dataset_clauses(tokens: list[tuple[str | None, str]]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The graph IRIs of the ``FROM`` and of the ``FROM NAMED`` clauses (prefixed names expanded with the query's
    ``PREFIX`` declarations and the pre-bound prefixes; relative IRIs against its ``BASE``)."""
    prefixes = dict(PREFIXES)
    base = ""
    graphs: dict[bool, list[str]] = {False: [], True: []}  # by whether the clause is FROM NAMED
    for position, (kind, value) in enumerate(tokens):
        keyword = value.upper() if kind == "word" else ""
        following = tokens[position + 1 : position + 4]
        if keyword == "PREFIX":
            _declare_prefix(prefixes, following, base)
        elif keyword == "BASE":
            base = _base(following, base)
        elif keyword == "FROM" and following:
            named, iri = _from_clause(following, prefixes, base)
            if iri:
                graphs[named].append(iri)
    return tuple(graphs[False]), tuple(graphs[True])


def _declare_prefix(prefixes: dict[str, str], following: list[tuple[str | None, str]], base: str) -> None:
    """Binds the prefix a ``PREFIX`` declaration names (its IRI resolved against the ``BASE`` before it)."""
    if len(following) >= 2 and following[1][0] == "iri":
        prefixes[following[0][1].rstrip(":")] = urljoin(base, following[1][1][1:-1])


def _base(following: list[tuple[str | None, str]], base: str) -> str:
    """The base IRI after a ``BASE`` declaration: the IRI it gives, else the one before."""
    return following[0][1][1:-1] if following and following[0][0] == "iri" else base


def _from_clause(
    following: list[tuple[str | None, str]], prefixes: dict[str, str], base: str
) -> tuple[bool, str | None]:
    """Whether a ``FROM`` clause is ``FROM NAMED``, and the graph IRI it gives (None: none that can be read)."""
    named = following[0][1].upper() == "NAMED"
    if named:
        following = following[1:]
    return named, _graph_iri(following[0], prefixes, base) if following else None


def _graph_iri(token: tuple[str | None, str], prefixes: dict[str, str], base: str) -> str | None:
    kind, value = token
    if kind == "iri":
        return urljoin(base, value[1:-1]) if base else value[1:-1]
    prefix, colon, local = value.partition(":")
    return prefixes[prefix] + local if kind == "word" and colon and prefix in prefixes else None


def _valid(match: re.Match[str]) -> bool:
    code = int(match.group(1) or match.group(2), 16)
    return code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF


def _check_service(following: list[tuple[str | None, str]], allowlist: Sequence[str]) -> None:
    if not allowlist:
        raise BadRequest("SERVICE (federated query) is disabled on this directory")
    if following and following[0][1].upper() == "SILENT":
        following = following[1:]
    endpoint = following[0][1][1:-1] if following and following[0][0] == "iri" else None
    if endpoint not in allowlist:
        raise BadRequest(
            f"SERVICE may only call the allow-listed endpoints ({', '.join(allowlist)}), "
            f"given {endpoint or 'a variable or prefixed name'}"
        )


class SparqlEngine:
    def __init__(
        self,
        store: ox.Store,
        *,
        timeout: float,
        max_results: int,
        service_allowlist: Sequence[str],
        abandon_on_timeout: bool = True,
        concurrency: int = 2,
        queue: int = 64,
    ) -> None:
        """``abandon_on_timeout``: answer a query stuck in one step when its time is up, leaving its thread to
        finish (in-process use); False when a supervisor kills the whole process instead (the query worker)."""
        self.store = store
        self.timeout = timeout
        self.abandon_on_timeout = abandon_on_timeout
        self.max_results = max_results
        self.service_allowlist = tuple(service_allowlist)
        self.accepted = max(1, concurrency) + queue
        self._executor = concurrent.futures.ThreadPoolExecutor(max(1, concurrency), thread_name_prefix="sparql")
        self._running = 0
        self._running_lock = threading.Lock()

    @property
    def running(self) -> int:
        """Queries running or waiting for a thread."""
        return self._running

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)

    async def run(
        self,
        query: str,
        accept: str,
        default_graphs: Sequence[str] = (),
        named_graphs: Sequence[str] = (),
    ) -> Answer:
        screened = screen(query, self.service_allowlist)
        with self._running_lock:
            if self._running >= self.accepted:
                raise ServiceUnavailable(
                    "The SPARQL endpoint is busy with other queries; retry shortly", headers={"Retry-After": "1"}
                )
            self._running += 1
        deadline = time.monotonic() + self.timeout
        cancelled = threading.Event()
        future = asyncio.get_running_loop().run_in_executor(
            self._executor, self._execute, query, accept, screened, default_graphs, named_graphs, deadline, cancelled
        )
        if not self.abandon_on_timeout:
            return await future
        try:
            return await asyncio.wait_for(asyncio.shield(future), self.timeout + 0.5)
        except TimeoutError:
            cancelled.set()
            raise QueryTimeout(
                f"The query did not finish within {self.timeout:g} s (REGISTRY_SPARQL_TIMEOUT); simplify it or "
                "add LIMIT",
                headers={"Retry-After": "1"},
            ) from None

    def _execute(
        self,
        query: str,
        accept: str,
        screened: Screened,
        default_graphs: Sequence[str],
        named_graphs: Sequence[str],
        deadline: float,
        cancelled: threading.Event,
    ) -> Answer:
        try:
            return self._evaluate(query, accept, screened, default_graphs, named_graphs, deadline, cancelled)
        except Exception as error:
            # oxigraph's result iterators must be freed on the thread that made them: the tracebacks hold the
            # frames that hold them, so they go here, not on the event loop's thread.
            cause: BaseException | None = error
            while cause is not None:
                cause.__traceback__ = None
                cause = cause.__cause__ or cause.__context__
            raise error from error.__cause__
        finally:
            with self._running_lock:
                self._running -= 1

    def _evaluate(
        self,
        query: str,
        accept: str,
        screened: Screened,
        default_graphs: Sequence[str],
        named_graphs: Sequence[str],
        deadline: float,
        cancelled: threading.Event,
    ) -> Answer:
        options = _query_options(screened, default_graphs, named_graphs)
        try:
            result = self.store.query(query, **options)
        except SyntaxError as error:
            raise _invalid(error) from error
        except OSError as error:
            raise _failed(error, screened) from error
        check = functools.partial(self._check, deadline=deadline, cancelled=cancelled)
        try:
            return self._answer(result, accept, check)
        except OSError as error:
            raise _failed(error, screened) from error

    def _check(self, count: int, *, deadline: float, cancelled: threading.Event) -> None:
        """Refuse an answer past ``max_results`` rows, and a query past its deadline or given up on."""
        if count > self.max_results:
            raise self._too_many()
        if cancelled.is_set() or time.monotonic() > deadline:
            raise QueryTimeout(f"The query did not finish within {self.timeout:g} s (REGISTRY_SPARQL_TIMEOUT)")

    def _answer(
        self, result: ox.QueryBoolean | ox.QuerySolutions | ox.QueryTriples, accept: str, check: Callable[[int], None]
    ) -> Answer:
        """The answer of an evaluated query in the accepted format, ``check`` applied as it is read."""
        if isinstance(result, ox.QueryBoolean):
            return results_answer(msgspec.json.encode({"head": {}, "boolean": bool(result)}), accept)
        if isinstance(result, ox.QuerySolutions):
            # oxigraph writes the JSON results itself (faster than building them here), in chunks: the
            # deadline is checked and the size bounded on each chunk, the rows counted at the end.
            writer = _Collector(MAX_ANSWER_BYTES, lambda: check(0), self._too_many)
            result.serialize(cast(IO[bytes], writer), ox.QueryResultsFormat.JSON)
            content = b"".join(writer.parts)
            check(solution_count(content))
            return results_answer(content, accept)
        triples = []
        for triple in result:
            triples.append(triple)
            check(len(triples))
        return graph_answer(triples, accept)

    def _too_many(self) -> BadRequest:
        return too_many(self.max_results)


def _query_options(screened: Screened, default_graphs: Sequence[str], named_graphs: Sequence[str]) -> dict[str, Any]:
    """oxigraph's options for a query: the pre-bound prefixes and the dataset it reads."""
    options: dict[str, Any] = {"prefixes": PREFIXES}
    if default_graphs:
        options["default_graph"] = dataset_graphs(default_graphs)
    elif not screened.names_dataset:
        # The union of every graph (the descriptions' and the store's own default graph, empty in the index).
        # oxigraph's is a bag, not a set: a triple two descriptions both state matches once for each.
        # (Setting it would also override the query's FROM, hence not with one.)
        options["use_default_graph_as_union"] = True
    if named_graphs:
        options["named_graphs"] = dataset_graphs(named_graphs)
    return options


def _invalid(error: SyntaxError) -> BadRequest:
    """The problem of a query the parser refuses: its message, and the line and column it names if any."""
    message = str(error)
    extra: dict[str, Any] = {"parserMessage": message}
    if position := _POSITION.search(message):
        extra |= {"line": int(position.group(1)), "column": int(position.group(2))}
    return BadRequest(f"The SPARQL query is not valid: {message}", **extra)


def _failed(error: OSError, screened: Screened) -> BadRequest | BadGateway:
    """What an evaluation error means: a federated endpoint that could not be queried (502: the query may work
    later, it is not the client's fault), else a query that cannot run."""
    if screened.federated:
        return BadGateway(f"A SERVICE endpoint of the query could not be queried: {error}")
    return BadRequest(f"The SPARQL query failed: {error}")


def too_many(max_results: int) -> BadRequest:
    return BadRequest(
        f"The query has more than {max_results} results (REGISTRY_SPARQL_MAX_RESULTS) or more than "
        f"{MAX_ANSWER_BYTES // 2**20} MiB of them; narrow it or add LIMIT"
    )


def dataset_graphs(iris: Sequence[str]) -> list[ox.NamedNode]:
    """The graphs of ``default-graph-uri`` / ``named-graph-uri``, checked to be IRIs."""
    try:
        return [ox.NamedNode(iri) for iri in iris]
    except ValueError as error:
        raise BadRequest(f"default-graph-uri / named-graph-uri must be IRIs: {error}") from error


def with_prefixes(query: str) -> str:
    """The query with the directory's pre-bound prefixes it does not declare itself declared before it, for a
    store that does not know them (on the first line: line numbers in its messages stay right)."""
    declared = {match.group(1) for match in _DECLARED_PREFIX.finditer(query)}
    missing = " ".join(f"PREFIX {name}: <{iri}>" for name, iri in PREFIXES.items() if name not in declared)
    return f"{missing} {query}" if missing else query


class _Collector:
    """A file for oxigraph's serialiser that keeps what it writes, within a size, checking the time."""

    def __init__(self, limit: int, check_time: Callable[[], None], too_large: Callable[[], Exception]) -> None:
        self.parts: list[bytes] = []
        self.size = 0
        self.limit = limit
        self.check_time = check_time
        self.too_large = too_large

    def write(self, data: bytes) -> int:
        self.size += len(data)
        if self.size > self.limit:
            raise self.too_large()
        self.check_time()
        self.parts.append(bytes(data))
        return len(data)

    def flush(self) -> None:
        pass


class _ResultSet(msgspec.Struct):
    bindings: list[msgspec.Raw]


class _Solutions(msgspec.Struct):
    results: _ResultSet | None = None


def solution_count(content: bytes) -> int:
    """Rows of SPARQL JSON results (-1 for an ASK answer, which has none)."""
    results = msgspec.json.decode(content, type=_Solutions).results
    return -1 if results is None else len(results.bindings)


def graph_answer(triples: Sequence[ox.Triple], accept: str) -> Answer:
    """A CONSTRUCT/DESCRIBE answer in the format the client asked for (JSON-LD by default)."""
    media_type = negotiate(accept, GRAPH_TYPES, "application/ld+json")
    content = ox.serialize(triples, format=GRAPH_TYPES[media_type], prefixes=PREFIXES) or b""
    return Answer(content, media_type)


def results_answer(content: bytes, accept: str) -> Answer:
    """SPARQL JSON results in the format the client asked for: SELECT in any results format, ASK in JSON or XML
    (406 when the client accepts only CSV or TSV, which SPARQL 1.1 defines for SELECT alone)."""
    offered = BOOLEAN_TYPES if solution_count(content) < 0 else SELECT_TYPES
    media_type = negotiate(accept, offered, "application/json")
    if media_type == "application/json" and not acceptable(accept, offered):
        raise NotAcceptable(
            "An ASK answer has no CSV or TSV form (SPARQL 1.1 Query Results CSV and TSV Formats cover SELECT "
            f"only); accept one of {', '.join(BOOLEAN_TYPES)}",
            acceptable=list(BOOLEAN_TYPES),
        )
    if offered[media_type] != ox.QueryResultsFormat.JSON:
        parsed = ox.parse_query_results(content, ox.QueryResultsFormat.JSON)
        content = parsed.serialize(format=offered[media_type]) or b""
    return Answer(content, media_type)


def acceptable(accept: str, offered: dict[str, Any]) -> bool:
    """Whether ``offered`` has a type the Accept header allows, or the header names none of the results formats
    (a client that did not ask for one gets the default)."""
    named = {part.split(";")[0].strip().lower() for part in accept.split(",") if _q(part) > 0}
    return bool(named & {*offered, "*/*", "application/*"}) or not named & set(SELECT_TYPES)


def _q(part: str) -> float:
    for param in part.split(";")[1:]:
        name, _, value = param.partition("=")
        if name.strip().lower() == "q":
            try:
                return float(value)
            except ValueError:
                return 0.0
    return 1.0


def negotiate(accept: str, offered: dict[str, Any], default: str) -> str:
    """The offered media type the Accept header prefers (q-values honoured); the default for */* or no match."""
    best, best_q = default, -1.0
    for order, part in enumerate(accept.split(",")):
        media, q = part.split(";")[0].strip().lower(), _q(part)
        if media in offered and q > 0 and q - order * 1e-6 > best_q:
            best, best_q = media, q - order * 1e-6
    return best
