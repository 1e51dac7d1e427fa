"""Tenants: which descriptions a reader may see.

A principal may belong to a tenant; a description carries the tenant of its creator, or none (shared: created by
a principal without a tenant, such as an admin publishing for everyone). A reader sees the shared descriptions and
those of its own tenant; an admin, and everyone while authentication is off, sees all. The scope itself is a value
of :mod:`registry.tenancy` (re-exported here); this module derives it from a principal.
"""

from __future__ import annotations

from registry.auth.authenticator import AuthMode
from registry.auth.principal import Principal
from registry.tenancy import EVERYTHING, TenantScope


def tenant_scope(principal: Principal | None, mode: AuthMode) -> TenantScope:
    if mode is AuthMode.OFF or (principal is not None and principal.is_admin):
        return EVERYTHING
    return TenantScope(everything=False, tenant=principal.tenant if principal is not None else None)


def writer_scope(principal: Principal | None) -> TenantScope:
    """What the author of a write may see: everything without a principal (writes need one once authentication is
    on) or as an admin, else as a reader of its tenant. A write to a description outside it is answered as a write
    to a missing one."""
    if principal is None or principal.is_admin:
        return EVERYTHING
    return TenantScope(everything=False, tenant=principal.tenant)


__all__ = ["EVERYTHING", "TenantScope", "tenant_scope", "writer_scope"]
