"""Authentication, ownership, namespaces and limits over real HTTP against a real server (docs/security.md).

One server runs with REGISTRY_AUTH=writes, API keys made with the ``registry keys`` CLI and a JWKS file of a
test identity provider; every write endpoint is tried with every kind of credential.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import asyncpg
import httpx
import jsonschema_rs
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.support.identity import AUDIENCE, ISSUER, Identity, ServedJwks
from tests.support.keys import create_key, keys_command
from tests.support.servers import REPO_ROOT, ServerProcess, fresh_database, wait_until
from tests.support.things import thing, versioned_tool
from tests.support.zygote import run_registry

PROBLEM = "application/problem+json"
MERGE_PATCH = {"Content-Type": "application/merge-patch+json"}
A2A_CARD = REPO_ROOT / "tests" / "data" / "a2a" / "adk_currency_agent-agent_card.json"
#: Seconds after a read of the JWKS before a token naming an unknown key may read it again
#: (``REGISTRY_AUTH_JWKS_REFETCH_COOLDOWN``, 30 by default): short, so that the test of a key rotated in waits little.
REFETCH_COOLDOWN = 2.0


def unsigned_token(subject: str) -> str:
    """``alg: none``: a token anyone can make."""
    payload = {"iss": ISSUER, "aud": AUDIENCE, "sub": subject, "exp": int(time.time()) + 600, "scope": "admin"}
    return jwt.encode(payload, None, algorithm="none")


class Setup:
    def __init__(self, server: ServerProcess, credentials: dict[str, str | None], database_url: str) -> None:
        self.server = server
        self.credentials = credentials
        self.database_url = database_url

    def client(self, who: str) -> httpx.Client:
        credential = self.credentials[who]
        headers = {"Authorization": f"Bearer {credential}"} if credential else {}
        return httpx.Client(base_url=self.server.base_url, headers=headers, timeout=30)


@pytest.fixture(scope="module")
def setup(postgres_admin_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    identity = Identity(tmp_path_factory.mktemp("idp"))
    with fresh_database(postgres_admin_url) as url:
        credentials: dict[str, str | None] = {
            "anonymous": None,
            "reader": create_key(url, "reader", "--scopes", "read"),
            "alice": create_key(url, "alice", "--scopes", "read,write"),
            "bob": create_key(url, "bob", "--scopes", "write"),
            "admin": create_key(url, "admin", "--scopes", "admin"),
            "tenant-b": create_key(url, "tenant-b", "--scopes", "write", "--tenant", "b"),
            "expired": create_key(url, "expired", "--scopes", "write", "--owner", "alice", "--expires", "1s"),
            "revoked": create_key(url, "revoked", "--scopes", "write", "--owner", "alice"),
            "acme": create_key(
                url, "acme-ci", "--scopes", "write", "--namespace", "urn:acme:*", "--vendor", "Acme Corp"
            ),
            "token": identity.token("carol", scope="registry:write"),
            "wrong-aud": identity.token("alice", audience="someone-else", scope="write", registry_owner="alice"),
            "unknown-key": identity.token(
                "alice", key=rsa.generate_private_key(public_exponent=65537, key_size=2048), scope="write"
            ),
            "alg-none": unsigned_token("alice"),
        }
        # The "expired" key lives one second from its creation, which ended before this moment.
        expired_by = time.monotonic() + 1
        keys_command(url, "revoke", "revoked")
        env = {
            "REGISTRY_AUTH": "writes",
            "REGISTRY_AUTH_JWKS": str(identity.jwks),
            "REGISTRY_AUTH_JWT_ISSUER": ISSUER,
            "REGISTRY_AUTH_JWT_AUDIENCE": AUDIENCE,
            "REGISTRY_PURGE_INTERVAL": "86400",
            # Every refused credential of the matrices below comes from this one address (the limit itself:
            # tests/integration/test_request_limits.py).
            "REGISTRY_RATE_LIMIT_AUTH_FAILURES": "100000/minute",
        }
        with ServerProcess(url, env) as server:
            time.sleep(max(0.0, expired_by - time.monotonic()))  # mostly passed while the server started
            yield Setup(server, credentials, url)
            log = server.output()
        secrets = [value for value in credentials.values() if value]
        assert not [secret for secret in secrets if secret in log], "a credential was written to the server log"


INVALID = ("expired", "revoked", "wrong-aud", "unknown-key", "alg-none")
#: Expected status of a write to alice's description, per credential (2xx cells by operation).
EXPECTED = {
    "anonymous": 401,
    "reader": 403,
    "bob": 403,
    "tenant-b": 403,
    "token": 403,
    "alice": "ok",
    "admin": "ok",
    **dict.fromkeys(INVALID, 401),
}


def weather(thing_id: str, vendor: str = "Alice Labs") -> dict[str, Any]:
    return thing(
        "Weather",
        id=thing_id,
        registration={"ttl": 3600},
        **{"lmos:metadata": {"lmos:vendor": {"lmos:name": vendor}}},
    )


def reset(setup: Setup, thing_id: str) -> None:
    """alice's description at ``thing_id``, as she registers it."""
    with setup.client("alice") as alice:
        response = alice.put(f"/things/{thing_id}", json=weather(thing_id))
        assert response.status_code in {201, 204}, response.text


def write(client: httpx.Client, operation: str, thing_id: str) -> httpx.Response:
    if operation == "put":
        return client.put(f"/things/{thing_id}", json=weather(thing_id))
    if operation == "patch":
        return client.patch(
            f"/things/{thing_id}",
            content=b'{"title": "Patched"}',
            headers={"Content-Type": "application/merge-patch+json"},
        )
    if operation == "delete":
        return client.delete(f"/things/{thing_id}")
    if operation == "lease":
        return client.post(f"/api/v1/things/{thing_id}/lease")
    if operation == "agent-import":
        card = json.loads(A2A_CARD.read_text())
        return client.post("/api/v1/agents/import", params={"format": "a2a", "id": thing_id}, json=card)
    assert operation == "import"
    tool = {"name": "forecast", "description": "Forecast for a city", "inputSchema": {"type": "object"}}
    return client.post("/api/v1/tools/import", params={"format": "mcp", "id": thing_id}, json=tool)


def assert_problem(response: httpx.Response, status: int, secret: str | None) -> None:
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["content-type"].startswith(PROBLEM)
    body = response.json()
    assert body["status"] == status
    assert body["detail"]
    if status == 401:
        assert response.headers["www-authenticate"].startswith('Bearer realm="registry"')
    if status == 403:
        assert body["rule"]
    if secret:
        assert secret not in response.text


@pytest.mark.parametrize("operation", ["put", "patch", "delete", "lease", "import", "agent-import"])
def test_authorization_matrix_of_writes(setup: Setup, operation: str) -> None:
    thing_id = f"urn:alice:{uuid.uuid4()}"
    for who, expected in EXPECTED.items():
        reset(setup, thing_id)
        with setup.client(who) as client:
            response = write(client, operation, thing_id)
        if expected == "ok":
            assert response.status_code in {200, 201, 204}, (who, operation, response.status_code, response.text)
        else:
            assert_problem(response, int(expected), setup.credentials[who])
            with setup.client("anonymous") as anonymous:
                # Refused writes changed nothing.
                assert anonymous.get(f"/things/{thing_id}").json()["title"] == "Weather", (who, operation)


def test_authorization_matrix_of_a_batch(setup: Setup) -> None:
    """The matrix for ``POST /api/v1/things/batch``: a sender without write credentials is refused the whole batch,
    one that may write but not this description is refused in its place; nothing refused changes anything."""
    thing_id = f"urn:alice:{uuid.uuid4()}"
    for who, expected in EXPECTED.items():
        reset(setup, thing_id)
        with setup.client(who) as client:
            response = client.post("/api/v1/things/batch", json=[{**weather(thing_id), "title": "Batched"}])
        if response.status_code != 200:
            assert_problem(response, int(expected), setup.credentials[who])
        else:
            (result,) = response.json()["results"]
            status = result["status"]
            assert status == (200 if expected == "ok" else expected), (who, result)
            if expected != "ok":
                assert result["problem"]["detail"], (who, result)
        with setup.client("anonymous") as anonymous:
            title = anonymous.get(f"/things/{thing_id}").json()["title"]
        assert title == ("Batched" if expected == "ok" else "Weather"), (who, title)


def test_a_batch_refuses_each_description_its_sender_may_not_write(setup: Setup) -> None:
    alices = f"urn:alice:{uuid.uuid4()}"
    reset(setup, alices)
    bobs = f"urn:bob:{uuid.uuid4()}"
    batch = [{**weather(alices), "title": "Taken over"}, weather(bobs, vendor="Bob Labs")]
    with setup.client("bob") as bob:
        answer = bob.post("/api/v1/things/batch", json=batch)
    assert answer.status_code == 200, answer.text
    refused, written = answer.json()["results"]
    assert (refused["status"], refused["id"]) == (403, alices)
    assert refused["problem"]["detail"]
    assert (written["status"], written["id"]) == (201, bobs)
    with setup.client("anonymous") as anonymous:
        assert anonymous.get(f"/things/{alices}").json()["title"] == "Weather"
        assert_problem(anonymous.post("/api/v1/things/batch", json=batch), 401, None)
    with setup.client("reader") as reader:
        assert_problem(reader.post("/api/v1/things/batch", json=batch), 403, setup.credentials["reader"])


def test_only_an_admin_transfers_ownership(setup: Setup) -> None:
    thing_id = f"urn:alice:{uuid.uuid4()}"
    reset(setup, thing_id)
    for who, expected in EXPECTED.items():
        with setup.client(who) as client:
            response = client.put(f"/api/v1/things/{thing_id}/owner", json={"owner": "key:alice"})
        if who == "admin":
            assert response.status_code == 200, response.text
        else:
            assert_problem(response, 403 if expected == "ok" else int(expected), setup.credentials[who])


def test_anonymous_registrations_need_write_credentials(setup: Setup) -> None:
    document = thing("Anonymous")
    del document["id"]
    for who in EXPECTED:
        with setup.client(who) as client:
            response = client.post("/things", json=document)
        if who in {"anonymous", *INVALID}:
            assert_problem(response, 401, setup.credentials[who])
        elif who == "reader":
            assert_problem(response, 403, setup.credentials[who])
        else:
            assert response.status_code == 201, (who, response.text)


def test_reads_stay_anonymous_with_auth_writes(setup: Setup) -> None:
    thing_id = f"urn:alice:{uuid.uuid4()}"
    reset(setup, thing_id)
    with setup.client("anonymous") as client:
        assert client.get(f"/things/{thing_id}").status_code == 200
        assert client.get("/things").status_code == 200
        assert client.post("/api/v1/resolve", json={"requirements": []}).status_code != 401
        assert client.get("/.well-known/wot").status_code == 200
    with setup.client("revoked") as client:
        # Credentials given on a read are verified all the same.
        assert_problem(client.get(f"/things/{thing_id}"), 401, setup.credentials["revoked"])


def test_the_creator_owns_and_an_admin_transfers(setup: Setup) -> None:
    thing_id = f"urn:alice:{uuid.uuid4()}"
    reset(setup, thing_id)
    with setup.client("anonymous") as anonymous:
        assert anonymous.get(f"/api/v1/things/{thing_id}/owner").json() == {"id": thing_id, "owner": "key:alice"}
    with setup.client("alice") as alice:
        assert_problem(alice.put(f"/api/v1/things/{thing_id}/owner", json={"owner": "key:bob"}), 403, None)
    with setup.client("admin") as admin:
        moved = admin.put(f"/api/v1/things/{thing_id}/owner", json={"owner": "key:bob"})
        assert moved.status_code == 200, moved.text
        assert moved.json()["owner"] == "key:bob"
    with setup.client("alice") as alice:
        refused = alice.put(f"/things/{thing_id}", json=weather(thing_id))
        assert_problem(refused, 403, None)
        assert refused.json()["rule"] == "owner"
        assert "'key:bob'" in refused.json()["detail"]
    with setup.client("bob") as bob:
        assert bob.delete(f"/things/{thing_id}").status_code == 204


def test_namespaces_and_vendors_refuse_impersonation(setup: Setup) -> None:
    with setup.client("acme") as acme:
        inside = f"urn:acme:{uuid.uuid4()}"
        assert acme.put(f"/things/{inside}", json=weather(inside, vendor="ACME corp")).status_code == 201
        outside = f"urn:telekom:{uuid.uuid4()}"
        refused = acme.put(f"/things/{outside}", json=weather(outside, vendor="Acme Corp"))
        assert_problem(refused, 403, None)
        assert refused.json()["rule"] == "namespace"
        assert "urn:acme:*" in refused.json()["detail"]
        impostor = f"urn:acme:{uuid.uuid4()}"
        refused = acme.put(f"/things/{impostor}", json=weather(impostor, vendor="Deutsche Telekom AG"))
        assert_problem(refused, 403, None)
        assert refused.json()["rule"] == "vendor"
        assert "Deutsche Telekom AG" in refused.json()["detail"]
        # Nor can a vendor be changed to another one later.
        patched = acme.patch(
            f"/things/{inside}",
            content=json.dumps({"lmos:metadata": {"lmos:vendor": {"lmos:name": "Deutsche Telekom AG"}}}),
            headers={"Content-Type": "application/merge-patch+json"},
        )
        assert_problem(patched, 403, None)
        assert patched.json()["rule"] == "vendor"


def test_a_token_principal_owns_what_it_creates(setup: Setup) -> None:
    thing_id = f"urn:carol:{uuid.uuid4()}"
    with setup.client("token") as carol:
        assert carol.put(f"/things/{thing_id}", json=weather(thing_id)).status_code == 201
    with setup.client("anonymous") as anonymous:
        assert anonymous.get(f"/api/v1/things/{thing_id}/owner").json()["owner"] == f"jwt:{ISSUER}|carol"
    with setup.client("alice") as alice:
        assert_problem(alice.delete(f"/things/{thing_id}"), 403, None)


def test_every_write_records_who_made_it(setup: Setup) -> None:
    thing_id = f"urn:alice:{uuid.uuid4()}"
    reset(setup, thing_id)
    with setup.client("admin") as admin:
        assert (
            admin.patch(
                f"/things/{thing_id}",
                content=b'{"version": {"instance": "2.0.0"}}',
                headers={"Content-Type": "application/merge-patch+json"},
            ).status_code
            == 204
        )
        versions = admin.get(f"/api/v1/things/{thing_id}/versions").json()["items"]
    assert [item["registered_by"] for item in versions] == ["key:admin"]

    async def actors() -> list[tuple[str, str | None]]:
        connection = await asyncpg.connect(setup.database_url)
        try:
            rows = await connection.fetch("SELECT type, actor FROM changes WHERE thing_id = $1 ORDER BY seq", thing_id)
            return [(row[0], row[1]) for row in rows]
        finally:
            await connection.close()

    assert asyncio.run(actors()) == [("thing_created", "key:alice"), ("thing_updated", "key:admin")]
    # Change events carry the actor too (replayed here from the change log with Last-Event-ID).
    seen = []
    with (
        setup.client("anonymous") as anonymous,
        anonymous.stream("GET", "/events", headers={"Last-Event-ID": "0"}) as stream,
    ):
        for line in stream.iter_lines():
            if line.startswith("data:") and thing_id in line:
                seen.append(json.loads(line.removeprefix("data:"))["actor"])
            if len(seen) == 2:
                break
    assert seen == ["key:alice", "key:admin"]


def test_secrets_are_stored_only_as_hashes(setup: Setup) -> None:
    async def dump() -> str:
        connection = await asyncpg.connect(setup.database_url)
        try:
            rows = []
            for table in ("api_keys", "changes", "descriptions"):
                rows += [str(tuple(row)) for row in await connection.fetch(f"SELECT * FROM {table}")]
            return "".join(rows)
        finally:
            await connection.close()

    stored = asyncio.run(dump())
    for who, secret in setup.credentials.items():
        if secret and secret.startswith("reg_"):
            assert secret not in stored, who
            assert secret.split("_", 2)[2] not in stored, who
    listing = keys_command(setup.database_url, "list", "--json").stdout
    assert "secret" not in listing
    assert json.loads(listing)[0]["name"]


def test_refuses_to_start_on_a_public_address_without_authentication(database_url: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "registry", "serve"],
        cwd=REPO_ROOT,
        env={**os.environ, "REGISTRY_HOST": "0.0.0.0", "REGISTRY_DATABASE_URL": database_url},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    message = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(message) == 1, done.stderr
    assert "Refusing to listen on 0.0.0.0 without authentication" in message[0]
    assert "REGISTRY_AUTH=off" in message[0]


def test_rate_limit_answers_429_then_recovers(start_server: Any) -> None:
    server = start_server({"REGISTRY_RATE_LIMIT_READS": "3/second"})
    with httpx.Client(base_url=server.base_url) as client:
        statuses = [client.get("/things").status_code for _ in range(4)]
        assert statuses[:3] == [200, 200, 200]
        limited = client.get("/things")
        assert_problem(limited, 429, None)
        retry_after = int(limited.headers["retry-after"])
        assert 1 <= retry_after <= 2
        time.sleep(retry_after + 0.1)
        assert client.get("/things").status_code == 200


def test_a_rate_limit_holds_across_replicas(start_server: Any) -> None:
    """Two replicas on one database share the counts: a client that spreads its requests over both gets the limit
    once, not once per replica (registry/auth/quotas.py)."""
    limit = {"REGISTRY_RATE_LIMIT_READS": "6/minute"}
    replicas = [start_server(limit), start_server(limit)]
    with httpx.Client(base_url=replicas[0].base_url) as first, httpx.Client(base_url=replicas[1].base_url) as second:
        assert [first.get("/things?limit=1").status_code for _ in range(3)] == [200, 200, 200]
        assert [second.get("/things?limit=1").status_code for _ in range(3)] == [200, 200, 200]
        time.sleep(2)  # each replica adds its counts and reads the others' every 0.5 s
        for client in (first, second):
            limited = client.get("/things?limit=1")
            assert_problem(limited, 429, None)
            assert int(limited.headers["retry-after"]) >= 1


def test_event_streams_are_capped_per_client(start_server: Any) -> None:
    server = start_server({"REGISTRY_MAX_STREAMS_PER_PRINCIPAL": "1"})
    with httpx.Client(base_url=server.base_url, timeout=10) as client, client.stream("GET", "/events") as first:
        assert first.status_code == 200
        second = client.get("/events")
        assert_problem(second, 429, None)
        assert second.headers["retry-after"]


def registry_cli(*arguments: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {key: value for key, value in os.environ.items() if key != "REGISTRY_TOKEN"}
    return run_registry(list(arguments), cwd=REPO_ROOT, env={**clean, **(env or {})})


def test_cli_sends_the_token_from_the_flag_or_the_environment(setup: Setup, tmp_path: Path) -> None:
    url = setup.server.base_url
    secret = setup.credentials["alice"]
    assert secret is not None
    documents = []
    for name in ("flag", "env", "none"):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(weather(f"urn:alice:{uuid.uuid4()}")))
        documents.append(str(path))
    assert registry_cli("--url", url, "register", documents[0], "--token", secret).returncode == 0
    assert registry_cli("--url", url, "register", documents[1], env={"REGISTRY_TOKEN": secret}).returncode == 0
    refused = registry_cli("--url", url, "register", documents[2])
    assert refused.returncode == 1
    assert "401" in refused.stderr
    assert secret not in refused.stderr


def test_sdk_raises_permanent_refusals_at_once(setup: Setup) -> None:
    from registry.client import (
        AgentRegistration,
        AsyncRegistryClient,
        ForbiddenError,
        RegistryClient,
        UnauthorizedError,
    )

    thing_id = f"urn:alice:{uuid.uuid4()}"
    with RegistryClient(setup.server.base_url, token=setup.credentials["alice"]) as alice:
        assert alice.register(weather(thing_id)).id == thing_id

    async def register_as(who: str) -> None:
        async with AsyncRegistryClient(setup.server.base_url, token=setup.credentials[who]) as client:
            registration = AgentRegistration(client, weather(thing_id), ttl=60, handle_signals=False)
            # Not retried: the first refusal ends start() within the client's timeout.
            await asyncio.wait_for(registration.start(), 10)

    with pytest.raises(UnauthorizedError):
        asyncio.run(register_as("revoked"))
    with pytest.raises(ForbiddenError) as refused:
        asyncio.run(register_as("bob"))
    assert refused.value.problem["rule"] == "owner"


def test_agent_registration_takes_a_url_and_a_token(setup: Setup) -> None:
    from registry.client import AgentRegistration, AsyncRegistryClient, UnauthorizedError

    thing_id = f"urn:alice:{uuid.uuid4()}"

    async def register(who: str) -> str | None:
        registration = AgentRegistration(
            setup.server.base_url, weather(thing_id), ttl=60, token=setup.credentials[who], handle_signals=False
        )
        async with registration:
            with setup.client("anonymous") as anonymous:
                owner = anonymous.get(f"/api/v1/things/{thing_id}/owner").json()["owner"]
        assert registration.client.http.is_closed  # its own client, closed on stop
        return cast(str | None, owner)

    assert asyncio.run(register("alice")) == "key:alice"
    with pytest.raises(UnauthorizedError):
        asyncio.run(asyncio.wait_for(register("revoked"), 10))
    with pytest.raises(ValueError, match="token goes with a URL"):
        AgentRegistration(AsyncRegistryClient(setup.server.base_url), weather(thing_id), ttl=60, token="x")


def test_the_directory_says_how_to_authenticate(setup: Setup) -> None:
    """``tdd-things-read-only-auth``: the directory TD declares bearer on its write forms (with the identity
    provider as authorization server), and the OpenAPI document declares security per operation."""
    with setup.client("anonymous") as anonymous:
        description = anonymous.get("/.well-known/wot").json()
        openapi = anonymous.get("/schema/openapi.json").json()
    schema = json.loads((REPO_ROOT / "tests" / "data" / "schemas" / "td-json-schema-validation.json").read_text())
    jsonschema_rs.Draft7Validator(schema, validate_formats=False).validate(description)
    assert description["securityDefinitions"]["bearer_sc"] == {
        "scheme": "bearer",
        "in": "header",
        "name": "Authorization",
        "authorization": ISSUER,
        "format": "jwt",
    }
    assert description["security"] == "nosec_sc"
    actions = description["actions"]
    assert {form.get("security") for form in actions["updateThing"]["forms"]} == {"bearer_sc"}
    assert {form.get("security") for form in actions["retrieveThing"]["forms"]} == {None}

    schemes = openapi["components"]["securitySchemes"]
    assert schemes["apiKey"]["scheme"] == schemes["accessToken"]["scheme"] == "bearer"
    assert schemes["accessToken"]["bearerFormat"] == "JWT"
    operations = {
        operation["operationId"]: operation.get("security")
        for path in openapi["paths"].values()
        for operation in path.values()
        if isinstance(operation, dict) and "operationId" in operation
    }
    credentials = [{"apiKey": []}, {"accessToken": []}]
    assert operations["createOrUpdateThing"] == credentials
    assert operations["transferThing"] == credentials
    assert operations["retrieveThing"] == [{}, *credentials]
    assert operations["searchSPARQLPost"] == [{}, *credentials]
    assert operations["directoryDescription"] == [{}]


def test_reads_need_credentials_with_auth_all(start_server: Any, own_database_url: str, jwks: ServedJwks) -> None:
    reader = create_key(own_database_url, f"reader-{uuid.uuid4().hex[:8]}", "--scopes", "read")
    writer = create_key(own_database_url, f"writer-{uuid.uuid4().hex[:8]}", "--scopes", "write")
    server = start_server(
        {
            "REGISTRY_AUTH": "all",
            "REGISTRY_AUTH_JWKS": jwks.url,
            "REGISTRY_AUTH_JWT_ISSUER": ISSUER,
            "REGISTRY_AUTH_JWT_AUDIENCE": AUDIENCE,
            "REGISTRY_MAX_DESCRIPTIONS_PER_OWNER": "1",
            "REGISTRY_AUTH_JWKS_REFETCH_COOLDOWN": str(REFETCH_COOLDOWN),
        },
        database=own_database_url,
    )
    started = time.monotonic()
    assert jwks.fetches == 1  # fetched at start
    with httpx.Client(base_url=server.base_url, timeout=30) as anonymous:
        for path in ("/things", "/api/v1/search", "/search/jsonpath?query=$", "/events"):
            assert_problem(anonymous.get(path), 401, None)
        assert anonymous.get("/.well-known/wot").json()["security"] == "bearer_sc"
        assert anonymous.get("/dashboard/").status_code == 200
        assert anonymous.get("/livez").status_code == 200
        # The event stream also takes the credential as ?access_token= (EventSource cannot send headers) ...
        with anonymous.stream("GET", "/events", params={"access_token": reader}) as stream:
            assert stream.status_code == 200
        # ... other routes do not.
        assert_problem(anonymous.get("/things", params={"access_token": reader}), 401, reader)
    with httpx.Client(base_url=server.base_url, headers={"Authorization": f"Bearer {reader}"}) as client:
        assert client.get("/things").status_code == 200
        assert_problem(client.put("/things/urn:x:1", json=weather("urn:x:1")), 403, reader)
    with httpx.Client(base_url=server.base_url, headers={"Authorization": f"Bearer {writer}"}) as client:
        first, second = f"urn:quota:{uuid.uuid4()}", f"urn:quota:{uuid.uuid4()}"
        assert client.put(f"/things/{first}", json=weather(first)).status_code == 201
        refused = client.put(f"/things/{second}", json=weather(second))
        assert_problem(refused, 403, writer)
        assert refused.json()["rule"] == "quota"
        assert client.put(f"/things/{first}", json=weather(first)).status_code == 204  # replacing is no new one
    # A token signed with a key the directory has not seen yet: the JWKS is fetched again (once the refetch
    # cooldown after the fetch at start has passed) and the key found.
    time.sleep(max(0.0, started + REFETCH_COOLDOWN + 1 - time.monotonic()))
    rotated = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwks.rotate_in(rotated, "test-2")
    token = jwt.encode(
        {"iss": ISSUER, "aud": AUDIENCE, "sub": "dave", "exp": int(time.time()) + 600, "scope": "read"},
        rotated,
        algorithm="RS256",
        headers={"kid": "test-2"},
    )
    with httpx.Client(base_url=server.base_url, headers={"Authorization": f"Bearer {token}"}) as client:
        assert client.get("/things").status_code == 200
    assert jwks.fetches == 2


def test_an_identity_provider_down_at_start_does_not_keep_the_directory_down(
    start_server: Any, own_database_url: str, identity: Identity, jwks: ServedJwks
) -> None:
    """The directory starts and serves while its JWKS URL fails: API keys work, tokens get 503 (retry, not 401),
    /readyz reports it without taking the replica out; the fetch is retried until it succeeds."""
    writer = create_key(own_database_url, f"writer-{uuid.uuid4().hex[:8]}", "--scopes", "write")
    jwks.failing = True
    server = start_server(
        {
            "REGISTRY_AUTH": "writes",
            "REGISTRY_AUTH_JWKS": jwks.url,
            "REGISTRY_AUTH_JWT_ISSUER": ISSUER,
            "REGISTRY_AUTH_JWT_AUDIENCE": AUDIENCE,
            # Retried every second (not after 5, 10, 20 … s), so that the test waits little once the JWKS answers.
            "REGISTRY_AUTH_JWKS_MAX_RETRY_DELAY": "1",
        },
        database=own_database_url,
    )
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        # Ready (once its SPARQL index is), the identity provider reported but not counted.
        wait_until(lambda: client.get("/readyz").status_code == 200, 30, "the server is ready")
        ready = client.get("/readyz")
        assert ready.json()["status"] == "ready, degraded"
        check = ready.json()["checks"]["identity_provider"]
        assert not check["ok"]
        assert check["state"] == "failing, not counted"  # what failed is the operator's (the log, an admin)
        assert jwks.url not in ready.text
        thing_id = f"urn:alice:{uuid.uuid4()}"
        token = identity.token("alice", scope="write")
        refused = client.put(
            f"/things/{thing_id}", json=weather(thing_id), headers={"Authorization": f"Bearer {token}"}
        )
        assert_problem(refused, 503, token)
        assert refused.headers["retry-after"]
        keyed = f"urn:keyed:{uuid.uuid4()}"
        assert client.put(
            f"/things/{keyed}", json=weather(keyed), headers={"Authorization": f"Bearer {writer}"}
        ).is_success
        jwks.failing = False
        deadline = time.monotonic() + 30  # retried every second
        while not client.get("/readyz").json()["checks"]["identity_provider"]["ok"]:
            assert time.monotonic() < deadline, "the JWKS was not fetched again"
            time.sleep(0.2)
        assert client.get("/readyz").json()["status"] == "ready"
        accepted = client.put(
            f"/things/{thing_id}", json=weather(thing_id), headers={"Authorization": f"Bearer {token}"}
        )
        assert accepted.status_code == 201, accepted.text


def test_readers_see_shared_descriptions_and_their_own_tenants(setup: Setup) -> None:
    """The Things API, JSONPath, SPARQL, search, facets, resolution and the per-id /api/v1 reads are scoped by
    tenant (events, changes and quality: test_events_changes_and_quality_show_only_what_the_reader_may_see)."""
    shared, of_b = f"urn:alice:{uuid.uuid4()}", f"urn:tenant-b:{uuid.uuid4()}"
    word, capability = f"Zq{uuid.uuid4().hex[:10]}", f"forecast_{uuid.uuid4().hex[:10]}"
    reset(setup, shared)
    with setup.client("tenant-b") as tenant_b:
        agent = {
            **weather(of_b),
            "title": f"Weather {word}",
            "@type": "lmos:Agent",
            "version": {"instance": "1.0.0"},
            "actions": {capability: {"forms": [{"href": "https://weather.example/forecast"}]}},
        }
        assert tenant_b.put(f"/things/{of_b}", json=agent).status_code == 201
    expectations = {"anonymous": False, "reader": False, "alice": False, "tenant-b": True, "admin": True}
    for who, sees_b in expectations.items():
        with setup.client(who) as client:
            listed = {item["id"] for item in client.get("/things").json()}
            assert shared in listed, who
            assert (of_b in listed) is sees_b, who
            found = client.get("/search/jsonpath", params={"query": "$[*].id"}).json()
            assert shared in found, who
            assert (of_b in found) is sees_b, who
            for path in (
                f"/things/{of_b}",
                f"/api/v1/things/{of_b}/summary",
                f"/api/v1/things/{of_b}/versions",
                f"/api/v1/things/{of_b}/owner",
                f"/api/v1/things/{of_b}/export?format=openai",
                f"/a2a/{of_b}/.well-known/agent-card.json",
            ):
                status = client.get(path).status_code
                assert (status != 404) is sees_b, (who, path, status)
            assert client.get(f"/things/{shared}").status_code == 200, who
            searched = client.get("/api/v1/search", params={"q": word}).json()["items"]
            assert bool(searched) is sees_b, who
            facets = client.get("/api/v1/facets", params={"q": word}).json()
            assert bool(facets["kind"]) is sees_b, (who, facets)
            resolved = client.post("/api/v1/resolve", json={"requirements": [{"capability": capability}]}).json()
            assert resolved["resolved"] is sees_b, (who, resolved)
            for query in (
                "SELECT DISTINCT ?s WHERE { ?s ?p ?o }",
                f"SELECT DISTINCT ?s FROM <{of_b}> WHERE {{ ?s ?p ?o }}",
                f"SELECT DISTINCT ?s WHERE {{ GRAPH <{of_b}> {{ ?s ?p ?o }} }}",
            ):
                answer = client.get(
                    "/search/sparql", params={"query": query}, headers={"Accept": "application/sparql-results+json"}
                )
                assert answer.status_code == 200, answer.text
                subjects = {binding["s"]["value"] for binding in answer.json()["results"]["bindings"]}
                assert (of_b in subjects) is sees_b, (who, query)
            everything = client.get(
                "/search/sparql",
                params={"query": "SELECT DISTINCT ?s WHERE { ?s ?p ?o }"},
                headers={"Accept": "application/sparql-results+json"},
            ).json()["results"]["bindings"]
            assert shared in {binding["s"]["value"] for binding in everything}, who


def test_write_limits_count_each_principal_apart(start_server: Any, own_database_url: str) -> None:
    first = create_key(own_database_url, f"limited-{uuid.uuid4().hex[:8]}", "--scopes", "write")
    second = create_key(own_database_url, f"limited-{uuid.uuid4().hex[:8]}", "--scopes", "write")
    server = start_server(
        {"REGISTRY_AUTH": "writes", "REGISTRY_RATE_LIMIT_WRITES": "2/minute"}, database=own_database_url
    )

    def register(secret: str) -> httpx.Response:
        thing_id = f"urn:limited:{uuid.uuid4()}"
        with httpx.Client(base_url=server.base_url, headers={"Authorization": f"Bearer {secret}"}) as client:
            return client.put(f"/things/{thing_id}", json=weather(thing_id))

    assert [register(first).status_code for _ in range(2)] == [201, 201]
    limited = register(first)
    assert_problem(limited, 429, first)
    # A burst early in a window weighs on the next one until half of it has passed: up to 1.5 periods.
    assert 1 <= int(limited.headers["retry-after"]) <= 90
    assert register(second).status_code == 201  # another principal has its own budget


def test_mcp_registry_reads_are_scoped_by_tenant(setup: Setup) -> None:
    from urllib.parse import quote

    name = f"io.github.tenant-b/weather-{uuid.uuid4().hex[:8]}"
    server_json = {"name": name, "description": "Weather for tenant b", "version": "1.0.0"}
    with setup.client("tenant-b") as tenant_b:
        published = tenant_b.post("/v0.1/publish", json=server_json)
        assert published.status_code == 200, published.text
    for who, sees in {"anonymous": False, "alice": False, "tenant-b": True, "admin": True}.items():
        with setup.client(who) as client:
            listed = client.get("/v0.1/servers", params={"search": name}).json()["servers"]
            assert bool(listed) is sees, who
            versions = client.get(f"/v0.1/servers/{quote(name, safe='')}/versions")
            assert (versions.status_code == 200) is sees, (who, versions.status_code)
            latest = client.get(f"/v0.1/servers/{quote(name, safe='')}/versions/latest")
            assert (latest.status_code == 200) is sees, (who, latest.status_code)


def event_ids_until(stream: httpx.Response, marker: str, secrets: list[str]) -> list[tuple[str, str]]:
    """(event type, id) of each event of ``stream`` up to the one about ``marker``; no line holds a secret."""
    seen: list[tuple[str, str]] = []
    event_type = ""
    for line in stream.iter_lines():
        assert not [secret for secret in secrets if secret in line]
        if line.startswith("event:"):
            event_type = line.removeprefix("event:").strip()
        elif line.startswith("data:"):
            seen.append((event_type, json.loads(line.removeprefix("data:"))["id"]))
            if seen[-1][1] == marker:
                return seen
    raise AssertionError(f"the stream ended before the event about {marker}")


def latest_seq(setup: Setup) -> int:
    """The newest change's position, 0 while the log is empty (a test run on its own starts with none)."""
    with setup.client("admin") as admin:
        items = admin.get("/api/v1/changes", params={"limit": 1}).json()["items"]
        return int(items[0]["seq"]) if items else 0


#: Who sees tenant b's descriptions: b itself and admins; neither anonymous readers nor principals of no tenant.
SEES_TENANT_B = {"anonymous": False, "reader": False, "alice": False, "tenant-b": True, "admin": True}


def test_events_changes_and_quality_show_only_what_the_reader_may_see(setup: Setup) -> None:
    """Nothing of tenant b reaches another tenant's reader through /events (live, filtered and replayed),
    /api/v1/changes or /api/v1/quality, also once b's description is deleted (the change log keeps the tenant)."""
    of_b, marker = f"urn:tenant-b:{uuid.uuid4()}", f"urn:alice:{uuid.uuid4()}"
    secrets = [secret for secret in setup.credentials.values() if secret]
    start = latest_seq(setup)
    clients = {who: setup.client(who) for who in SEES_TENANT_B}
    with contextlib.ExitStack() as stack:
        for client in clients.values():
            stack.enter_context(client)
        # Subscribed once the headers are in: every change committed afterwards is the stream's.
        live = {who: stack.enter_context(client.stream("GET", "/events")) for who, client in clients.items()}
        filtered = {
            who: stack.enter_context(client.stream("GET", "/events", params={"kind": "tool"}))
            for who, client in clients.items()
        }
        b_client = clients["tenant-b"]
        assert b_client.put(f"/things/{of_b}", json=versioned_tool(of_b, "1.0.0", [])).status_code == 201
        assert b_client.put(f"/things/{of_b}", json=versioned_tool(of_b, "1.0.1", ["q"])).status_code == 204
        moved = clients["admin"].put(f"/api/v1/things/{of_b}/owner", json={"owner": "key:tenant-b-ops"})
        assert moved.status_code == 200, moved.text
        assert moved.json()["tenant"] == "b"
        for who, sees_b in SEES_TENANT_B.items():
            report = clients[who].get("/api/v1/quality", params={"limit": 1000}).json()
            assert (of_b in {item["id"] for item in report["lint"]}) is sees_b, who
            assert (of_b in {item["id"] for item in report["bumps"]}) is sees_b, who
        assert clients["admin"].delete(f"/things/{of_b}").status_code == 204
        # A shared description every stream gets (also the filtered ones: a tool): b's events would precede it.
        assert clients["alice"].put(f"/things/{marker}", json=versioned_tool(marker, "1.0.0", [])).status_code == 201
        b_events = [
            ("thing_created", of_b),
            ("thing_updated", of_b),
            ("thing_transferred", of_b),
            ("thing_deleted", of_b),
        ]
        for who, sees_b in SEES_TENANT_B.items():
            for stream in (live[who], filtered[who]):
                seen = event_ids_until(stream, marker, secrets)
                assert [event for event in seen if event[1] == of_b] == (b_events if sees_b else []), who
        for who, sees_b in SEES_TENANT_B.items():
            client = clients[who]
            with client.stream("GET", "/events", headers={"Last-Event-ID": str(start)}) as replayed:
                seen = event_ids_until(replayed, marker, secrets)
            assert [event for event in seen if event[1] == of_b] == (b_events if sees_b else []), who
            changes = client.get("/api/v1/changes", params={"limit": 1000}).json()["items"]
            assert [item["type"] for item in reversed(changes) if item["id"] == of_b] == (
                [event_type for event_type, _ in b_events] if sees_b else []
            ), who
            # The version that broke compatibility is kept after the delete, and still only b's readers see it.
            report = client.get("/api/v1/quality", params={"limit": 1000}).json()
            assert (of_b in {item["id"] for item in report["bumps"]}) is sees_b, who
            assert of_b not in {item["id"] for item in report["lint"]}, who
            # So are its kept versions themselves.
            versions = client.get(f"/api/v1/things/{of_b}/versions")
            assert (versions.status_code == 200) is sees_b, (who, versions.status_code)

    async def tenants() -> set[str | None]:
        connection = await asyncpg.connect(setup.database_url)
        try:
            return {row[0] for row in await connection.fetch("SELECT tenant FROM changes WHERE thing_id = $1", of_b)}
        finally:
            await connection.close()

    assert asyncio.run(tenants()) == {"b"}  # written by every write path: create, update, transfer, delete


def test_an_ownership_transfer_is_in_the_change_log(setup: Setup) -> None:
    thing_id = f"urn:alice:{uuid.uuid4()}"
    reset(setup, thing_id)
    start = latest_seq(setup)
    with setup.client("anonymous") as anonymous:
        etag = anonymous.get(f"/things/{thing_id}").headers["etag"]
    with setup.client("admin") as admin:
        assert admin.put(f"/api/v1/things/{thing_id}/owner", json={"owner": "key:bob"}).status_code == 200
    with setup.client("anonymous") as anonymous:
        # The document did not change, so neither did its revision.
        assert anonymous.get(f"/things/{thing_id}").headers["etag"] == etag
        entry = next(item for item in anonymous.get("/api/v1/changes").json()["items"] if item["id"] == thing_id)
        assert (entry["type"], entry["actor"], entry["transferred_from"], entry["transferred_to"]) == (
            "thing_transferred",
            "key:admin",
            "key:alice",
            "key:bob",
        )
        for path in ("/events", "/events/thing_transferred"):
            with anonymous.stream("GET", path, headers={"Last-Event-ID": str(start)}) as stream:
                event_type = ""
                for line in stream.iter_lines():
                    if line.startswith("event:"):
                        event_type = line.removeprefix("event:").strip()
                    elif line.startswith("data:") and thing_id in line:
                        data = json.loads(line.removeprefix("data:"))
                        break
            assert event_type == "thing_transferred", path
            assert data == {"id": thing_id, "from": "key:alice", "to": "key:bob", "actor": "key:admin"}, path
    with setup.client("bob") as bob:
        # The new owner's later writes are audited as the others.
        patched = bob.patch(f"/things/{thing_id}", content=b'{"title": "Now bob\'s"}', headers=MERGE_PATCH)
        assert patched.status_code == 204, patched.text
        latest = bob.get("/api/v1/changes", params={"limit": 2}).json()["items"]
    assert [(item["type"], item["actor"]) for item in latest] == [
        ("thing_updated", "key:bob"),
        ("thing_transferred", "key:admin"),
    ]


def test_a_batch_write_is_its_tenants_in_the_change_log(setup: Setup) -> None:
    of_b = f"urn:tenant-b:{uuid.uuid4()}"
    with setup.client("tenant-b") as tenant_b:
        answer = tenant_b.post("/api/v1/things/batch", json=[weather(of_b)])
        assert answer.status_code == 200, answer.text
        assert [item["status"] for item in answer.json()["results"]] == [201]
    for who, sees_b in SEES_TENANT_B.items():
        with setup.client(who) as client:
            changes = client.get("/api/v1/changes", params={"limit": 1000}).json()["items"]
        assert (of_b in {item["id"] for item in changes}) is sees_b, who
