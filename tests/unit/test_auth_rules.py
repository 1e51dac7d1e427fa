"""The rules of registry/auth without a server: modes, scopes, namespaces, vendors, owners."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from registry.auth.authenticator import AuthMode, auth_mode
from registry.auth.ownership import authorize_write, in_namespaces
from registry.auth.principal import Principal, Scope, parse_scopes
from registry.auth.tenancy import TenantScope, tenant_scope
from registry.config import ConfigError, Settings
from registry.errors import Forbidden
from registry.events.filters import DescriptionFilter
from registry.events.history import apply_change
from registry.events.hub import EVENT_TYPES, Subscriber, encode_event
from registry.store.changes import Change

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def principal(**fields: Any) -> Principal:
    return Principal(**{"name": "ci", "scopes": frozenset({Scope.WRITE}), "owner": "team-a", **fields})


def test_default_mode_is_off_on_loopback_and_refuses_elsewhere() -> None:
    assert auth_mode(Settings(host="127.0.0.1")) is AuthMode.OFF
    assert auth_mode(Settings(host="::1")) is AuthMode.OFF
    assert auth_mode(Settings(host="localhost")) is AuthMode.OFF
    with pytest.raises(ConfigError, match=re.escape("Refusing to listen on 0.0.0.0 without authentication")):
        auth_mode(Settings(host="0.0.0.0"))
    assert auth_mode(Settings(host="0.0.0.0", auth="off")) is AuthMode.OFF
    assert auth_mode(Settings(host="0.0.0.0", auth_jwks="/etc/jwks.json")) is AuthMode.WRITES


def test_deployments_configure_authentication() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    image_env = dict(re.findall(r"\b(REGISTRY_[A-Z_]+)=(\S+)", dockerfile))
    assert auth_mode(Settings(host=image_env["REGISTRY_HOST"], auth=image_env["REGISTRY_AUTH"])) is AuthMode.WRITES
    deployment = yaml.safe_load((DEPLOY / "kubernetes" / "base" / "deployment.yaml").read_text())
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    env = {item["name"]: item.get("value", "") for item in container["env"]}
    assert auth_mode(Settings(host=env["REGISTRY_HOST"], auth=env["REGISTRY_AUTH"])) is AuthMode.WRITES


def test_scopes_include_the_lesser_ones() -> None:
    admin = principal(scopes=parse_scopes(["registry:admin"]))
    assert admin.allows(Scope.READ)
    assert admin.allows(Scope.WRITE)
    reader = principal(scopes=parse_scopes(["read", "unknown"]))
    assert reader.allows(Scope.READ)
    assert not reader.allows(Scope.WRITE)


def test_namespace_patterns() -> None:
    assert in_namespaces("urn:acme:agents:weather", ("urn:acme:*",))
    assert in_namespaces("https://agents.acme.com/a/b", ("https://agents.acme.com/*",))
    assert not in_namespaces("https://agents.acme.com.evil.org/a", ("https://agents.acme.com/*",))
    assert not in_namespaces("urn:acme", ("urn:acme:*",))
    assert in_namespaces("urn:x.y", ("urn:x.y",))
    assert not in_namespaces("urn:xzy", ("urn:x.y",))


def test_rules_name_what_failed() -> None:
    acme = {"lmos:metadata": {"lmos:vendor": {"lmos:name": "ACME"}}}
    bound = principal(namespaces=("urn:acme:*",), vendors=("Acme",))
    authorize_write(bound, "urn:acme:1", acme, exists=False, owner=None)
    with pytest.raises(Forbidden) as refused:
        authorize_write(bound, "urn:other:1", acme, exists=False, owner=None)
    assert refused.value.rule == "namespace"
    # Ids the directory chose (anonymous registrations) are under no namespace rule; vendors still apply.
    authorize_write(bound, "urn:uuid:1", acme, exists=False, owner=None, assigned_id=True)
    telekom = {"lmos:metadata": {"lmos:vendor": {"lmos:name": "Deutsche Telekom AG"}}}
    with pytest.raises(Forbidden) as refused:
        authorize_write(bound, "urn:acme:1", telekom, exists=False, owner=None)
    assert refused.value.rule == "vendor"
    with pytest.raises(Forbidden) as refused:
        authorize_write(bound, "urn:acme:1", acme, exists=True, owner="team-b")
    assert refused.value.rule == "owner"
    with pytest.raises(Forbidden) as refused:
        authorize_write(bound, "urn:acme:1", acme, exists=True, owner=None)
    assert refused.value.rule == "owner"
    admin = principal(scopes=frozenset({Scope.ADMIN}))
    authorize_write(admin, "urn:acme:1", telekom, exists=True, owner="team-b")
    authorize_write(None, "urn:acme:1", telekom, exists=True, owner="team-b")


def test_a_subscriber_wants_only_changes_its_reader_may_see() -> None:
    def subscriber(readers: TenantScope) -> Subscriber:
        return Subscriber(frozenset(EVENT_TYPES), False, DescriptionFilter(), readers, queue_size=4, start=0)

    def change(tenant: str | None) -> Change:
        return Change(1, "urn:x", "thing_created", "{}", dt.datetime.now(dt.UTC), tenant=tenant)

    of_a = subscriber(tenant_scope(principal(tenant="a"), AuthMode.WRITES))
    anonymous = subscriber(tenant_scope(None, AuthMode.WRITES))
    admin = subscriber(tenant_scope(principal(scopes=frozenset({Scope.ADMIN})), AuthMode.WRITES))
    assert [of_a.wants(change(t)) for t in (None, "a", "b")] == [True, True, False]
    assert [anonymous.wants(change(t)) for t in (None, "a", "b")] == [True, False, False]
    assert [admin.wants(change(t)) for t in (None, "a", "b")] == [True, True, True]


def test_a_transfer_event_says_who_gave_what_to_whom_and_leaves_the_document() -> None:
    diff = '{"id": "urn:x", "from": "alice", "to": "bob"}'
    transfer = Change(7, "urn:x", "thing_transferred", diff, dt.datetime.now(dt.UTC), actor="admin")
    expected = b'event: thing_transferred\nid: 7\ndata: {"id":"urn:x","from":"alice","to":"bob","actor":"admin"}\n\n'
    assert encode_event(transfer, False) == encode_event(transfer, True) == expected
    document = {"id": "urn:x", "title": "T"}
    assert apply_change(document, "thing_transferred", transfer.diff) == document
