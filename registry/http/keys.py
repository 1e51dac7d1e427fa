"""``/api/v1/keys``: API keys managed over HTTP by an admin (create, list, revoke), as ``registry keys`` does on
the database. The secret of a new key is in the create's answer only; lists and revocations never show it.

Only an admin's credentials manage keys: with authentication off there is no admin, and a key made then would
be a credential waiting for the day authentication is turned on, so the API refuses (``registry keys create`` on
the directory's host still works). Each create and revoke is logged on ``registry.audit`` with who did it.
"""

from __future__ import annotations

import logging
from typing import Any

from litestar import Controller, Request, Response, delete, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody

from registry.auth.keys import KeyFieldError, KeyRecord, key_state, new_key, parse_expiry
from registry.auth.principal import KEY_ORIGIN, Principal, identity
from registry.errors import BadRequest, Forbidden
from registry.http.access import principal_of
from registry.http.contract import documented
from registry.http.dependencies import Access
from registry.wire import ApiKey, ApiKeyList, CreatedApiKey, NewApiKey

audit = logging.getLogger("registry.audit")
#: Also while authentication is off, when there is no admin (the guard answers 401 and 403 once it is on).
NOT_ADMIN = {403: "Only an admin's credentials manage keys, and only while authentication is on"}
ADMIN = {"access": "admin"}
#: The secret of a new key must not be kept by a cache or proxy on its way.
NO_STORE = {"Cache-Control": "no-store"}


def api_key(record: KeyRecord) -> ApiKey:
    return ApiKey(
        id=record.id,
        name=record.name,
        scopes=record.scopes,
        owner=record.owner,
        ownerIdentity=identity(KEY_ORIGIN, record.owner),
        namespaces=record.namespaces,
        vendors=record.vendors,
        tenant=record.tenant,
        created=record.created,
        expires=record.expires,
        revoked=record.revoked,
        lastUsed=record.last_used,
        state=key_state(record),
    )


def _admin(request: Request[Any, Any, Any]) -> Principal:
    """The admin making the request; the guard has checked its scope once authentication is on."""
    principal = principal_of(request)
    if principal is None or not principal.is_admin:
        raise Forbidden(
            "Keys are managed over HTTP by an admin key or token, so only while authentication is on "
            "(REGISTRY_AUTH=writes or all); with it off, run `registry keys create` where the directory's "
            "database is reachable",
            rule="scope",
        )
    return principal


class KeysController(Controller):
    path = "/api/v1/keys"
    tags = ["Keys"]

    @post(
        operation_id="createKey",
        summary="Create an API key (admin); its secret is in this answer only",
        opt={**ADMIN, **documented(problems={**NOT_ADMIN, 409: "A key with this name exists"})},
    )
    async def create(
        self, data: JSONBody[NewApiKey], request: Request[Any, Any, Any], access: NamedDependency[Access]
    ) -> Response[CreatedApiKey]:
        admin = _admin(request)
        try:
            record, secret = new_key(
                data.name,
                data.scopes,
                owner=data.owner,
                namespaces=tuple(data.namespaces),
                vendors=tuple(data.vendors),
                tenant=data.tenant,
                expires=parse_expiry(data.expires),
            )
        except KeyFieldError as error:
            raise BadRequest(
                f"The key cannot be created: {error}",
                validationErrors=[{"field": error.field, "description": str(error)}],
            ) from None
        await access.keys.add(record)
        audit.info(
            "api key created",
            extra={
                "key_id": record.id,
                "key_name": record.name,
                "scopes": ",".join(record.scopes),
                "tenant": record.tenant,
                "actor": admin.actor,
            },
        )
        public = api_key(record)
        created = CreatedApiKey(**{name: getattr(public, name) for name in public.__struct_fields__}, secret=secret)
        return Response(created, status_code=201, headers=NO_STORE)

    @get(
        operation_id="listKeys",
        summary="Every API key, without secrets (admin)",
        opt={**ADMIN, **documented(problems=NOT_ADMIN)},
    )
    async def list_keys(self, request: Request[Any, Any, Any], access: NamedDependency[Access]) -> ApiKeyList:
        _admin(request)
        return ApiKeyList(items=[api_key(record) for record in await access.keys.all()])

    @delete(
        "/{key_id:str}",
        operation_id="revokeKey",
        summary="Revoke an API key by its id (admin): it authenticates nothing from then on",
        status_code=200,
        opt={**ADMIN, **documented(problems={**NOT_ADMIN, 404: "No key has this id"})},
    )
    async def revoke(
        self, key_id: FromPath[str], request: Request[Any, Any, Any], access: NamedDependency[Access]
    ) -> ApiKey:
        admin = _admin(request)
        record = await access.keys.revoke(key_id)
        audit.info(
            "api key revoked",
            extra={"key_id": record.id, "key_name": record.name, "actor": admin.actor},
        )
        return api_key(record)


__all__ = ["KeysController", "api_key"]
