"""Find by need in words: the search's ranked hits, each with how to call it (what the MCP tool ``find`` answers).

The ranking is the search's (``DiscoveryService.search`` with ``q`` the need); this use case adds, for each hit,
the forms to call it by, read from the description: the matched capability's first, then the description's own
(an A2A agent's interfaces, an MCP server's remotes), then its other actions'.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection
from typing import Annotated, Any, Literal
from urllib.parse import urljoin

import msgspec

from registry.auth.tenancy import EVERYTHING, TenantScope
from registry.conventions.a2a import BINDING
from registry.conventions.mcp import TRANSPORT
from registry.discovery.service import DiscoveryService, SearchParams
from registry.errors import BadRequest
from registry.found import Findings, Form, Found, Invocation, findings_of
from registry.store.things import StoredDescription, ThingStore

#: Most hits one find answers.
MAX_FOUND = 50
#: Longest need accepted, in characters.
MAX_NEED_CHARS = 1000
#: Forms listed per hit.
MAX_FORMS = 10


#: A constraint's text: not empty, not long.
Short = Annotated[str, msgspec.Meta(min_length=1, max_length=500)]


class FindRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A need in words, with optional constraints."""

    need: Annotated[
        str,
        msgspec.Meta(
            min_length=1,
            max_length=MAX_NEED_CHARS,
            description="What you need, in plain words (e.g. 'tell me tomorrow's weather in Berlin')",
        ),
    ]
    kind: Annotated[
        Literal["agent", "tool", "thing"] | None,
        msgspec.Meta(description="Only agents, tools (e.g. MCP servers) or plain things"),
    ] = None
    vendor: Annotated[
        Short | None, msgspec.Meta(description="Only this vendor's (words or word prefixes of its name)")
    ] = None
    capability: Annotated[
        Short | None, msgspec.Meta(description="Only descriptions offering this capability (id or name)")
    ] = None
    version: Annotated[
        Short | None,
        msgspec.Meta(
            description="Range the capability's version must satisfy, npm (^1.2, >=2) or Maven ([1.0,2.0)); "
            "needs capability"
        ),
    ] = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=MAX_FOUND, description="Most hits to return")] = 10


async def find(discovery: DiscoveryService, request: FindRequest, readers: TenantScope = EVERYTHING) -> Findings:
    """The hits for ``request`` that ``readers`` may see, best first, each saying how to call it."""
    if request.version is not None and request.capability is None:
        raise BadRequest(
            "version needs capability (the capability whose version is constrained)",
            invalidParams=[{"name": "version", "reason": "requires capability"}],
        )
    params = SearchParams(
        kind=request.kind,
        vendor=request.vendor,
        capability=request.capability,
        capability_version=request.version,
        q=request.need,
        limit=request.limit,
    )
    try:
        result = await discovery.search(params, discovery.directory.settings.max_page_size, readers)
    except BadRequest as error:
        raise _as_need(error) from error
    findings = findings_of(msgspec.to_builtins(result))
    # The hits' descriptions in one round trip; one deleted since the search has no call.
    ids = [item.id for item in findings.items]
    live = await ThingStore.current(discovery.directory.things.database, ids, dt.datetime.now(dt.UTC))
    items = [_with_call(item, live.get(item.id), readers) for item in findings.items]
    return msgspec.structs.replace(findings, items=items)


def _as_need(error: BadRequest) -> BadRequest:
    """A refusal of the search's ``q`` told of the ``need`` it was given as."""
    params = error.extra.get("invalidParams") or []
    if not any(isinstance(item, dict) and item.get("name") == "q" for item in params):
        return error
    renamed = [{**item, "name": "need"} if item.get("name") == "q" else item for item in params]
    detail = "need " + error.detail[2:] if error.detail.startswith("q ") else error.detail
    return BadRequest(detail, invalidParams=renamed)


def _with_call(item: Found, stored: StoredDescription | None, readers: TenantScope) -> Found:
    if stored is None or not readers.sees(stored.tenant):
        return item
    matched = {name for capability in item.matched for name in (capability.name, capability.id) if name}
    return msgspec.structs.replace(item, call=invocation(stored.document(), matched))


def invocation(document: dict[str, Any], matched: Collection[str] = ()) -> Invocation:
    """How to call the described agent or tool: the forms of the ``matched`` actions, the description's own
    forms, then the other actions' (relative URLs resolved against ``base``)."""
    base = document.get("base") if isinstance(document.get("base"), str) else None
    declared = document.get("actions")
    actions: dict[str, Any] = declared if isinstance(declared, dict) else {}
    forms = [
        *_actions_forms(actions, [name for name in actions if name in matched], base),
        *_forms(document, base, None),
        *_actions_forms(actions, [name for name in actions if name not in matched], base),
    ][:MAX_FORMS]
    return Invocation(endpoint=forms[0].href if forms else base, forms=forms)


def _actions_forms(actions: dict[str, Any], names: list[str], base: str | None) -> list[Form]:
    """The forms of the actions ``names``, in their order, each naming its action as the capability."""
    return [form for name in names for form in _forms(actions[name], base, name)]


def _forms(holder: Any, base: str | None, capability: str | None) -> list[Form]:
    forms = holder.get("forms") if isinstance(holder, dict) else None
    if not isinstance(forms, list):
        return []
    return [_form(form, base, capability) for form in forms if isinstance(form, dict) and _text(form.get("href"))]


def _form(form: dict[str, Any], base: str | None, capability: str | None) -> Form:
    href = str(form["href"])
    op = form.get("op")
    return Form(
        href=urljoin(base, href) if base else href,
        op=op if isinstance(op, str) or (isinstance(op, list) and all(isinstance(o, str) for o in op)) else None,
        capability=capability,
        content_type=_text(form.get("contentType")),
        binding=_text(form.get(BINDING)) or _text(form.get(TRANSPORT)) or _text(form.get("subprotocol")),
    )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


__all__ = ["MAX_FOUND", "FindRequest", "find", "invocation"]
