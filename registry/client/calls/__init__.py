"""The directory's HTTP API described once, for the async and the blocking client alike.

Each operation is a function that builds a ``Call``: the request to send and how to read its response. A paged
listing is a ``Call`` whose answer is a ``Page`` that carries the ``Call`` of the next page; an event
subscription is a ``Subscription``. The clients (registry/client/clients.py) only add I/O: the parameters, names
and docstrings of their methods are these functions'.

The functions are grouped by area: ``things`` (``/things``), ``discovery`` (``/api/v1``: search, versions, …),
``queries`` (SPARQL, JSONPath, resolution, compatibility), ``formats`` (tools and Agent Cards) and ``events``
(``/events``); ``call`` holds ``Call``, ``Page`` and what reads answers. This package gathers them all.
"""

from registry.client.calls.call import (
    CLOSED_BEFORE_ANSWER,
    IDEMPOTENT_METHODS,
    MERGE_PATCH_JSON,
    TD_JSON,
    Call,
    Page,
    api_thing_path,
    thing_path,
)
from registry.client.calls.discovery import (
    facets,
    find,
    iter_search,
    iter_versions,
    recent_changes,
    search,
    summary,
    version,
    versions,
)
from registry.client.calls.events import (
    STREAM_POSITION,
    Subscription,
    covered_by,
    event_from,
    events_request,
    subscribe,
)
from registry.client.calls.formats import Exported, export, import_card, import_tool
from registry.client.calls.queries import (
    SPARQL_RESULTS_JSON,
    compare,
    compatibility,
    jsonpath,
    resolve,
    sparql,
    sparql_graph,
)
from registry.client.calls.things import (
    delete,
    get,
    iter_things,
    list_things,
    patch,
    register,
    register_batch,
    renew_lease,
    replace,
)
from registry.client.vocabulary import EVENT_TYPES, SEARCH_SORTS, TOOL_FORMATS

__all__ = [
    "CLOSED_BEFORE_ANSWER",
    "EVENT_TYPES",
    "IDEMPOTENT_METHODS",
    "MERGE_PATCH_JSON",
    "SEARCH_SORTS",
    "SPARQL_RESULTS_JSON",
    "STREAM_POSITION",
    "TD_JSON",
    "TOOL_FORMATS",
    "Call",
    "Exported",
    "Page",
    "Subscription",
    "api_thing_path",
    "compare",
    "compatibility",
    "covered_by",
    "delete",
    "event_from",
    "events_request",
    "export",
    "facets",
    "find",
    "get",
    "import_card",
    "import_tool",
    "iter_search",
    "iter_things",
    "iter_versions",
    "jsonpath",
    "list_things",
    "patch",
    "recent_changes",
    "register",
    "register_batch",
    "renew_lease",
    "replace",
    "resolve",
    "search",
    "sparql",
    "sparql_graph",
    "subscribe",
    "summary",
    "thing_path",
    "version",
    "versions",
]
