"""The rules of registry/auth without a server: modes, scopes, namespaces, vendors, owners."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from registry.auth.authenticator import AuthMode, auth_mode
from registry.auth.ownership import DerivedId, Grant, Holder, authorize_write, in_namespaces, parse_owner
from registry.auth.principal import KEY_ORIGIN, Principal, Scope, identity, parse_scopes
from registry.auth.tenancy import TenantScope, tenant_scope
from registry.config import ConfigError, Settings
from registry.errors import BadRequest, Forbidden, NotFound
from registry.events.filters import DescriptionFilter
from registry.events.history import apply_change
from registry.events.hub import EVENT_TYPES, Subscriber, encode_event
from registry.store.changes import Change

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def principal(**fields: Any) -> Principal:
    return Principal(**{"name": "ci", "scopes": frozenset({Scope.WRITE}), "owner_name": "team-a", **fields})


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
    authorize_write(bound, "urn:acme:1", acme, holder=None)
    with pytest.raises(Forbidden) as refused:
        authorize_write(bound, "urn:other:1", acme, holder=None)
    assert refused.value.rule == "namespace"
    # Ids the directory chose (anonymous registrations) are under no namespace rule; vendors still apply.
    authorize_write(bound, "urn:uuid:1", acme, holder=None, assigned_id=True)
    telekom = {"lmos:metadata": {"lmos:vendor": {"lmos:name": "Deutsche Telekom AG"}}}
    with pytest.raises(Forbidden) as refused:
        authorize_write(bound, "urn:acme:1", telekom, holder=None)
    assert refused.value.rule == "vendor"
    with pytest.raises(Forbidden) as refused:
        authorize_write(bound, "urn:acme:1", acme, holder=Holder("key:team-b", None))
    assert refused.value.rule == "owner"
    with pytest.raises(Forbidden) as refused:
        authorize_write(bound, "urn:acme:1", acme, holder=Holder(None, None))
    assert refused.value.rule == "owner"
    admin = principal(scopes=frozenset({Scope.ADMIN}))
    authorize_write(admin, "urn:acme:1", telekom, holder=Holder("key:team-b", None))
    authorize_write(None, "urn:acme:1", telekom, holder=Holder("key:team-b", None))


def test_an_owner_is_its_origin_its_name_and_its_tenant() -> None:
    key = principal(name="bobfree", owner_name="bobfree")
    token = principal(name="bobfree", owner_name="bobfree", origin="https://issuer.example")
    assert (key.owner, key.actor) == ("key:bobfree", "key:bobfree")
    assert token.owner == token.actor == "jwt:https://issuer.example|bobfree"
    held_by_key = Holder(key.owner, None)
    authorize_write(key, "urn:x", {}, holder=held_by_key)
    with pytest.raises(Forbidden) as refused:
        authorize_write(token, "urn:x", {}, holder=held_by_key)
    assert refused.value.rule == "owner"
    # The same owner name in another tenant is another owner; where it cannot read, as if nothing were there.
    of_b = principal(owner_name="alice", tenant="b")
    with pytest.raises(Forbidden):
        authorize_write(of_b, "urn:x", {}, holder=Holder("key:alice", None))
    with pytest.raises(NotFound):
        authorize_write(of_b, "urn:x", {}, holder=Holder("key:alice", "a"), creates=False)
    with pytest.raises(Forbidden) as refused:
        authorize_write(of_b, "urn:x", {}, holder=Holder("key:alice", "a"))
    assert "alice" not in refused.value.detail
    assert "'a'" not in refused.value.detail


def test_identities_cannot_collide_whatever_the_names() -> None:
    # An issuer holding the separator is escaped, so the first "|" always ends the issuer.
    pairs = [("https://a|b", "c"), ("https://a", "b|c"), ("https://a%7Cb", "c"), (KEY_ORIGIN, "jwt:https://a|b")]
    identities = [identity(origin, name) for origin, name in pairs]
    assert len(set(identities)) == len(identities)
    assert identities[3] == "key:jwt:https://a|b"


def test_a_transfer_names_the_owner_with_its_origin() -> None:
    issuer = "https://issuer.example|x%"
    assert parse_owner(" key:team-b ", issuer) == "key:team-b"
    escaped = identity(issuer, "auth0|42")
    assert parse_owner(escaped, issuer) == escaped
    for refused in ("team-b", "key:", "jwt:https://issuer.example", "jwt:https://other.example|bob", "jwt:|bob"):
        with pytest.raises(BadRequest) as error:
            parse_owner(refused, issuer)
        assert error.value.extra["invalidParams"][0]["name"] == "owner", refused


def test_a_derived_id_belongs_to_the_party_bound_to_what_it_was_derived_from() -> None:
    squatter = principal(name="squatter", owner_name="squatter")
    acme = principal(name="acme-ci", owner_name="acme", vendors=("Acme Corp",))
    tool = DerivedId(vendor="ACME corp")
    first = authorize_write(squatter, "urn:uuid:t", {}, holder=None, assigned_id=True, derived=tool)
    assert first == Grant(takes_over=False, rightful=False)
    squatted = Holder(squatter.owner, None, rightful=first.rightful)
    assert authorize_write(acme, "urn:uuid:t", {}, holder=squatted, assigned_id=True, derived=tool) == Grant(
        takes_over=True, rightful=True
    )
    # Only by registering it: a change of the squatter's description stays the squatter's.
    with pytest.raises(Forbidden):
        authorize_write(acme, "urn:uuid:t", {}, holder=squatted, creates=False, derived=tool)
    # The rightful holder keeps it against anyone, bound or not.
    other_acme = principal(name="acme-2", owner_name="acme-2", vendors=("Acme Corp",))
    for claimant in (squatter, other_acme):
        with pytest.raises(Forbidden):
            authorize_write(claimant, "urn:uuid:t", {}, holder=Holder(acme.owner, None, rightful=True), derived=tool)
    # A card's id: a principal bound to namespaces must cover the card's URL, and then holds it rightfully.
    card = DerivedId(url="https://agents.acme.com/a2a/weather")
    origin = principal(namespaces=("https://agents.acme.com/*",))
    assert authorize_write(origin, "urn:uuid:c", {}, holder=None, assigned_id=True, derived=card).rightful
    elsewhere = principal(namespaces=("https://agents.evil.example/*",))
    with pytest.raises(Forbidden) as refused:
        authorize_write(elsewhere, "urn:uuid:c", {}, holder=None, assigned_id=True, derived=card)
    assert refused.value.rule == "namespace"
    assert not authorize_write(squatter, "urn:uuid:c", {}, holder=None, assigned_id=True, derived=card).rightful


def test_an_expired_registration_stays_its_owners_for_the_grace() -> None:
    owner, other = principal(owner_name="agent"), principal(owner_name="someone-else")
    lapsed = Holder(owner.owner, None, lapses=dt.datetime(2030, 1, 1, tzinfo=dt.UTC))
    authorize_write(owner, "urn:x", {}, holder=lapsed)
    with pytest.raises(Forbidden) as refused:
        authorize_write(other, "urn:x", {}, holder=lapsed)
    assert (refused.value.rule, "2030-01-01T00:00:00+00:00" in refused.value.detail) == ("owner", True)


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
