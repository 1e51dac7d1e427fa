"""Use cases of the other conventions: A2A Agent Cards in and out, and the MCP Registry API (v0.1).

Every write goes through :class:`~registry.directory.service.DirectoryService` (validation, projections, change
log, events and whatever checks that write path applies), so a card is one more way to register a description.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import datetime as dt
import json
import uuid
from pathlib import Path
from typing import Any

import jwt
import msgspec

from registry.auth.ownership import DerivedId, may_take_over
from registry.auth.principal import Principal
from registry.auth.tenancy import EVERYTHING, TenantScope, writer_scope
from registry.conventions import a2a, mcp
from registry.descriptions.ids import position_problem
from registry.descriptions.summary import KIND_AGENT, summarise
from registry.descriptions.versions import precedence, sort_key
from registry.directory.service import DirectoryService
from registry.errors import BadRequest, Conflict, InvalidDescription, InvalidId, NotFound
from registry.store.servers import PublishedVersion, ServerQuery, ServerStore
from registry.wire import CardSignature, ImportedAgent, SignatureReport

#: Signature algorithms accepted with a trusted key (never "none", never an HMAC with a public key).
SIGNATURE_ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"]


def load_trusted_keys(path: Path | None) -> jwt.PyJWKSet | None:
    """The JWK Set of REGISTRY_A2A_TRUSTED_KEYS, read once at start-up."""
    if path is None:
        return None
    return jwt.PyJWKSet.from_dict(json.loads(path.read_text(encoding="utf-8")))


def card_url(card: dict[str, Any]) -> str:
    """The URL a card is served at: its first interface's, else its own ``url`` ("" if it names none)."""
    interfaces = card.get("supportedInterfaces")
    first = interfaces[0] if isinstance(interfaces, list) and interfaces and isinstance(interfaces[0], dict) else {}
    endpoint = first.get("url") or card.get("url") or ""
    return endpoint if isinstance(endpoint, str) else str(endpoint)


def card_id(card: dict[str, Any]) -> str:
    """A stable id for a card without one: from its URL and its name (re-import replaces)."""
    seed = f"a2a-card:{card_url(card)}#{card.get('name', '')}"
    return f"urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, seed)}"


def _protected_header(signature: dict[str, Any]) -> dict[str, Any]:
    protected = signature.get("protected")
    if not isinstance(protected, str):
        return {}
    try:
        header = json.loads(base64.urlsafe_b64decode(protected + "=" * (-len(protected) % 4)))
    except (binascii.Error, ValueError):
        return {}
    return header if isinstance(header, dict) else {}


#: ``_meta`` key of the registry-managed metadata of a server version (MCP Registry API).
OFFICIAL_META = "io.modelcontextprotocol.registry/official"
#: Page sizes of ``GET /v0.1/servers``.
DEFAULT_SERVER_PAGE, MAX_SERVER_PAGE = 30, 100
LATEST = "latest"


def _timestamp(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


def _encode_cursor(thing_id: str, version: str) -> str:
    return base64.urlsafe_b64encode(msgspec.json.encode([thing_id, version])).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[str, str]:
    try:
        thing_id, version = msgspec.json.decode(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, ValueError, TypeError, msgspec.DecodeError) as error:
        raise _bad_cursor() from error
    if not (isinstance(thing_id, str) and isinstance(version, str)):
        raise _bad_cursor()
    if position_problem(thing_id) or position_problem(version):
        raise _bad_cursor()
    return thing_id, version


def _bad_cursor() -> BadRequest:
    return BadRequest(
        "The cursor is not one this registry returned (use metadata.nextCursor as given)",
        invalidParams=[{"name": "cursor", "reason": "not a cursor of this listing"}],
    )


@dataclasses.dataclass(frozen=True, slots=True)
class ServerListing:
    """``GET /v0.1/servers`` parameters."""

    cursor: str | None = None
    limit: int = DEFAULT_SERVER_PAGE
    search: str | None = None
    updated_since: dt.datetime | None = None
    version: str | None = None
    include_deleted: bool = False


class ConventionService:
    def __init__(
        self, directory: DirectoryService, servers: ServerStore, trusted_keys: jwt.PyJWKSet | None = None
    ) -> None:
        self.directory = directory
        self.servers = servers
        self.trusted_keys = trusted_keys

    # -- A2A

    async def import_card(
        self, card: Any, thing_id: str | None = None, *, principal: Principal | None = None
    ) -> ImportedAgent:
        """Store an Agent Card as an ``lmos:Agent`` description (re-importing the same card replaces it)."""
        if thing_id is not None:
            InvalidId.check(thing_id, parameter="id")
        try:
            parsed = a2a.parse_card(card)
        except a2a.CardError as error:
            raise InvalidDescription(error.errors, "Not a valid A2A Agent Card: " + str(error)) from error
        derived = None
        if not thing_id:
            # The id of the card's origin: a party whose namespaces cover its URL holds it (registry/auth/ownership.py).
            thing_id, derived = card_id(card), DerivedId(url=card_url(card) or None)
        report = self._signature_report(card, parsed)
        outcome = await self.directory.put(
            thing_id,
            a2a.card_to_description(card, thing_id),
            principal=principal,
            derived=derived,
            assigned_id=derived is not None,
        )
        return ImportedAgent(
            id=thing_id,
            location=f"/things/{thing_id}",
            card_base=f"/a2a/{thing_id}",
            created=outcome.created,
            signatures=report,
            notices=outcome.notices,
        )

    def _signature_report(self, card: dict[str, Any], parsed: Any) -> SignatureReport:
        signatures = a2a.signatures_of(card)
        headers = [_protected_header(signature) for signature in signatures]
        listed = [
            msgspec.convert(
                {key: header[key] for key in ("kid", "alg", "jku") if isinstance(header.get(key), str)}, CardSignature
            )
            for header in headers
        ]
        if not signatures:
            return SignatureReport(count=0, signatures=[])
        if self.trusted_keys is None:
            return SignatureReport(len(signatures), listed, None, "no trusted keys configured")
        keys = self.trusted_keys

        def key_for(kid: str | None, jku: str | None) -> Any:
            # Keys come from the operator's JWK Set only: a jku in the card is never fetched.
            try:
                return keys[kid or ""]
            except KeyError as error:
                raise jwt.PyJWTError(f"no trusted key {kid!r}") from error

        # The A2A SDK (protobuf, pydantic) loads on the first card, not with every process.
        from a2a.utils.signing import SignatureVerificationError, create_signature_verifier

        verifier = create_signature_verifier(key_for, SIGNATURE_ALGORITHMS)
        try:
            verifier(parsed)
        except SignatureVerificationError as error:
            return SignatureReport(len(signatures), listed, False, str(error))
        return SignatureReport(len(signatures), listed, True, "a signature verifies with a trusted key")

    async def card(self, thing_id: str) -> dict[str, Any]:
        """The Agent Card of an agent: exact for an imported card; 400 for tools and things."""
        document = (await self.directory.get(thing_id)).document()
        if summarise(document).kind != KIND_AGENT:
            raise BadRequest(
                f"{thing_id!r} is not an agent (lmos:Agent); only agents have A2A Agent Cards",
                invalidParams=[{"name": "format", "reason": "a2a applies to agents"}],
            )
        return a2a.description_to_card(document)

    # -- MCP Registry API

    async def publish(self, server: Any, *, principal: Principal | None = None) -> dict[str, Any]:
        """``POST /v0.1/publish``: a new version of a server (its first, or above the latest).

        The directory's ownership rules apply (registry/auth/ownership.py): the server's namespace is its
        ``lmos:vendor``, so a publisher bound to vendors may only publish names in its own namespaces, and only
        the owner of a server publishes its next versions.
        """
        try:
            mcp.validate_server(server)
        except mcp.ServerError as error:
            raise InvalidDescription(error.errors, "Not a valid server.json: " + str(error)) from error
        name, version = server["name"], server["version"]
        thing_id = mcp.server_id(name)
        # The server's name is in its namespace: a publisher bound to it (as a vendor) holds the id rightfully,
        # and starts afresh where a publisher that was not published first.
        derived = DerivedId(vendor=mcp.namespace_of(name))
        statuses: dict[str, Any] = {}
        # Another tenant's server is a missing one to this publisher: "already published" and "below the latest"
        # are said only of servers it may see (the write itself is then refused as an unavailable id).
        current = await self._current(thing_id, writer_scope(principal))
        if current is not None and await self._taken_over(thing_id, principal, derived):
            current = None
        if current is not None:
            if mcp.server_of(current) is None:
                raise Conflict(f"{thing_id!r} is a description that was not published as an MCP server")
            statuses = mcp.statuses_of(current)
            published = await self.servers.versions(ServerQuery(mcp.SERVER_TYPE, thing_id=thing_id, version=version))
            if published:
                raise BadRequest(
                    f"Version {version} of {name} is already published; versions are immutable, publish a new one",
                    validationErrors=[{"field": "version", "description": "already published"}],
                )
            latest = mcp.server_of(current)["version"]  # type: ignore[index]
            if sort_key(version) and sort_key(latest) and precedence(version) < precedence(latest):
                raise BadRequest(
                    f"Version {version} is below the latest published version {latest} of {name}; "
                    "this registry publishes the versions of a server in increasing order",
                    validationErrors=[{"field": "version", "description": f"must be above {latest}"}],
                )
        await self.directory.put(
            thing_id, mcp.server_to_description(server, statuses), principal=principal, derived=derived
        )
        return await self.server_version(name, version)

    async def _taken_over(self, thing_id: str, principal: Principal | None, derived: DerivedId) -> bool:
        holder = await self.directory.holder(thing_id)
        return holder is not None and may_take_over(principal, holder, derived)

    async def _current(self, thing_id: str, writers: TenantScope) -> dict[str, Any] | None:
        """The current description of ``thing_id`` if ``writers`` may see it."""
        try:
            return (await self.directory.get(thing_id, writers)).document()
        except NotFound:
            return None

    async def list_servers(self, listing: ServerListing, readers: TenantScope = EVERYTHING) -> dict[str, Any]:
        limit = min(max(listing.limit, 1), MAX_SERVER_PAGE)
        after = None if listing.cursor is None else _decode_cursor(listing.cursor)
        rows = await self.servers.versions(_listing_query(listing, readers), after=after, limit=limit + 1)
        more = len(rows) > limit
        rows = rows[:limit]
        servers = [
            response for row in rows if (response := _server_response(row)) is not None and _listed(response, listing)
        ]
        metadata: dict[str, Any] = {"count": len(servers)}
        if more and rows:
            metadata["nextCursor"] = _encode_cursor(rows[-1].thing_id, rows[-1].version)
        return {"servers": servers, "metadata": metadata}

    async def server_versions(
        self, name: str, include_deleted: bool = False, readers: TenantScope = EVERYTHING
    ) -> dict[str, Any]:
        rows = await self.servers.versions(ServerQuery(mcp.SERVER_TYPE, thing_id=mcp.server_id(name), readers=readers))
        responses = [response for row in rows if (response := _server_response(row)) is not None]
        visible = [response for response in responses if include_deleted or _status(response) != "deleted"]
        if not visible:
            raise NotFound(f"No MCP server named {name!r}")
        visible.sort(key=lambda response: _official(response)["publishedAt"], reverse=True)
        return {"servers": visible, "metadata": {"count": len(visible)}}

    async def server_version(
        self, name: str, version: str, include_deleted: bool = False, readers: TenantScope = EVERYTHING
    ) -> dict[str, Any]:
        latest = version == LATEST
        query = ServerQuery(
            mcp.SERVER_TYPE,
            thing_id=mcp.server_id(name),
            latest_only=latest,
            version=None if latest else version,
            readers=readers,
        )
        rows = await self.servers.versions(query)
        response = _server_response(rows[0]) if rows else None
        if response is None or (not include_deleted and _status(response) == "deleted"):
            raise NotFound(f"No version {version!r} of an MCP server named {name!r}")
        return response

    async def set_status(
        self,
        name: str,
        version: str | None,
        status: str,
        message: str | None = None,
        *,
        principal: Principal | None = None,
    ) -> list[dict[str, Any]]:
        """The lifecycle status of one version (or of every version): a new revision of the server's description."""
        thing_id = mcp.server_id(name)
        current = await self._current(thing_id, writer_scope(principal))
        server = None if current is None else mcp.server_of(current)
        if current is None or server is None:
            raise NotFound(f"No MCP server named {name!r}")
        versions = await self._status_versions(name, server, version)
        changed = _timestamp(dt.datetime.now(dt.UTC))
        statuses = dict(mcp.statuses_of(current))
        statuses.update((each, _status_entry(status, message, changed)) for each in versions)
        document = dict(current)
        document[mcp.STATUS_MEMBER] = statuses
        await self.directory.put(thing_id, document, principal=principal)
        return [await self.server_version(name, each, include_deleted=True) for each in versions]

    async def _status_versions(self, name: str, server: dict[str, Any], version: str | None) -> list[str]:
        """The published versions a status change applies to: the one named (``latest``: the server's current
        version), or every one."""
        rows = await self.servers.versions(ServerQuery(mcp.SERVER_TYPE, thing_id=mcp.server_id(name)))
        versions = [row.version for row in rows]
        if version is None:
            return versions
        version = server["version"] if version == LATEST else version
        if version not in versions:
            raise NotFound(f"No version {version!r} of an MCP server named {name!r}")
        return [version]


def _listing_query(listing: ServerListing, readers: TenantScope) -> ServerQuery:
    """The published versions ``GET /v0.1/servers`` reads: matching the search, changed since ``updated_since``,
    of the version asked for (``latest``: the latest of each server)."""
    return ServerQuery(
        mcp.SERVER_TYPE,
        id_contains=listing.search or None,
        modified_since=listing.updated_since,
        latest_only=listing.version == LATEST,
        version=None if listing.version in (None, LATEST) else listing.version,
        readers=readers,
    )


def _listed(response: dict[str, Any], listing: ServerListing) -> bool:
    """Whether a listing shows a version. Deleted versions are left out unless asked for (always shown with
    ``updated_since``, as the spec says); with ``updated_since``, so are those whose status changed before."""
    since = listing.updated_since
    if _status(response) == "deleted" and not (listing.include_deleted or since is not None):
        return False
    return since is None or _updated_at(response) >= since


def _status_entry(status: str, message: str | None, changed: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"status": status, "statusChangedAt": changed}
    if message:
        entry["statusMessage"] = message
    return entry


def _server_response(row: PublishedVersion) -> dict[str, Any] | None:
    """The MCP ``ServerResponse`` of a published version: its server.json and the registry's ``_meta``."""
    server = mcp.server_of(msgspec.json.decode(row.document_text))
    if server is None:
        return None
    current = msgspec.json.decode(row.current_text)
    entry = mcp.statuses_of(current).get(row.version, {})
    published = _timestamp(row.registered)
    changed = entry.get("statusChangedAt", published)
    official: dict[str, Any] = {"status": entry.get("status", "active")}
    if entry.get("statusMessage"):
        official["statusMessage"] = entry["statusMessage"]
    # statusChangedAt (newer drafts of the spec) is left out: the 2025-12-01 document forbids members it does not
    # name; updatedAt carries the moment of the last status change.
    official |= {
        "publishedAt": published,
        # A status changes after its version was published.
        "updatedAt": changed,
        "isLatest": row.version == row.latest,
    }
    return {"server": server, "_meta": {OFFICIAL_META: official}}


def _official(response: dict[str, Any]) -> dict[str, Any]:
    official: dict[str, Any] = response["_meta"][OFFICIAL_META]
    return official


def _status(response: dict[str, Any]) -> str:
    return str(_official(response)["status"])


def _updated_at(response: dict[str, Any]) -> dt.datetime:
    return dt.datetime.fromisoformat(_official(response)["updatedAt"].replace("Z", "+00:00"))


__all__ = ["ConventionService", "ServerListing", "card_id", "card_url", "load_trusted_keys"]
