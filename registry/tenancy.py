"""The value types the store and the access rules share: who may see a description, and who holds an id.

They sit below both :mod:`registry.store` (which filters and reads by them) and :mod:`registry.auth` (which derives
them from a principal and checks writes against them), so that the store imports nothing of authentication.

A principal may belong to a tenant; a description carries the tenant of its creator, or none (shared: created by
a principal without a tenant, such as an admin publishing for everyone). A reader sees the shared descriptions and
those of its own tenant; an admin, and everyone while authentication is off, sees all.
"""

from __future__ import annotations

import dataclasses
import datetime as dt


@dataclasses.dataclass(frozen=True, slots=True)
class TenantScope:
    #: Sees every description (admins; authentication off).
    everything: bool
    #: The reader's tenant (besides the shared descriptions); None = shared ones only.
    tenant: str | None = None

    def sees(self, tenant: str | None) -> bool:
        return self.everything or tenant is None or tenant == self.tenant


EVERYTHING = TenantScope(everything=True)


@dataclasses.dataclass(frozen=True, slots=True)
class Holder:
    """Who holds an id: the owner identity (None: registered while authentication was off) and tenant of its
    description, or of its registration that expired less than the grace ago."""

    owner: str | None
    tenant: str | None
    #: The owner holds it by a binding to what the id was derived from, or by an admin's decision.
    rightful: bool = False
    #: When the claim of an expired registration ends; None while the description is live.
    lapses: dt.datetime | None = None

    @property
    def live(self) -> bool:
        return self.lapses is None


__all__ = ["EVERYTHING", "Holder", "TenantScope"]
