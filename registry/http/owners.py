"""Ownership of ids: ``/api/v1/things/{id}/owner`` tells who owns a description (its owner identity,
``key:<name>`` or ``jwt:<issuer>|<name>``, and its tenant); an admin transfers it with PUT, naming the new owner
the same way (a ``thing_transferred`` entry of the change log: who gave it, from whom, to whom). The new owner
holds it in the description's tenant."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, get, put
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody

from registry.auth.ownership import parse_owner
from registry.directory.service import DirectoryService
from registry.http.access import principal_of, tenant_scope_of
from registry.http.middleware.ids import thing_id_from
from registry.wire import Ownership, OwnerTransfer


class OwnersController(Controller):
    path = "/api/v1/things/{thing_id:str}/owner"
    tags = ["Ownership"]

    @get(operation_id="thingOwner", summary="The owner (and tenant) of a description")
    async def current_owner(
        self, thing_id: FromPath[str], request: Request[Any, Any, Any], directory: NamedDependency[DirectoryService]
    ) -> Ownership:
        thing_id = thing_id_from(thing_id)
        held = await directory.ownership(thing_id, tenant_scope_of(request))
        return Ownership(id=thing_id, owner=held.owner, tenant=held.tenant)

    @put(
        operation_id="transferThing",
        summary="Give a description to another owner (admin)",
        opt={"access": "admin"},
        status_code=200,
    )
    async def transfer(
        self,
        thing_id: FromPath[str],
        data: JSONBody[OwnerTransfer],
        request: Request[Any, Any, Any],
        directory: NamedDependency[DirectoryService],
    ) -> Ownership:
        thing_id = thing_id_from(thing_id)
        owner = parse_owner(data.owner, directory.settings.auth_jwt_issuer)
        before = await directory.transfer(thing_id, owner, principal=principal_of(request))
        return Ownership(id=thing_id, owner=owner, tenant=before.tenant)


__all__ = ["OwnersController"]
