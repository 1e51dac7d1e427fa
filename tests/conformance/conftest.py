"""Conformance suite plumbing: TD factories, problem assertions, and the ``ID,Status`` report.

Every test is named ``test_<assertion id with _ for ->`` optionally followed by ``__<aspect>``; an assertion
passes when all of its tests pass. ``--tdd-report PATH`` (``-`` for the terminal) writes the CSV.
"""

from __future__ import annotations

import contextlib
import csv
import io
import re
import sys
import uuid
from collections.abc import Callable, Iterator
from http import HTTPStatus
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.servers import ServerProcess, fresh_database

TD10_CONTEXT = "https://www.w3.org/2019/wot/td/v1"
TD11_CONTEXT = "https://www.w3.org/2022/wot/td/v1.1"
DISCOVERY_CONTEXT = "https://www.w3.org/2022/wot/discovery"
TD_JSON = {"content-type": "application/td+json"}
MERGE_PATCH = {"content-type": "application/merge-patch+json"}
#: RFC 3339 date-time with a mandatory offset (``tdd-absolute-time``).
RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")

#: The §2.4 checklist (research/wot-discovery-tdd.md); ids without a test are reported as ``untested``.
_CHECKLIST_LINES = (
    "tdd-http-error-response tdd-http-error-response-utf-8 tdd-http-head tdd-http-unsupported-feature",
    "tdd-things-list-only tdd-things-crud tdd-things-crudl tdd-things-default-representation",
    "tdd-things-create-known-vs-anonymous tdd-things-create-known-td tdd-things-create-known-td-resp",
    "tdd-things-create-anonymous-td tdd-things-create-anonymous-id tdd-things-create-anonymous-td-resp",
    "tdd-anonymous-td-identifier tdd-anonymous-td-local-uuid tdd-things-retrieve tdd-things-retrieve-resp",
    "tdd-things-retrieve-resp-content-type tdd-things-update tdd-things-update-resp",
    "tdd-things-update-partial tdd-things-update-partial-mergepatch tdd-things-update-partial-contenttype",
    "tdd-things-update-partial-partialtd tdd-things-update-partial-resp tdd-things-delete",
    "tdd-things-delete-resp tdd-things-list-method tdd-things-list-resp tdd-things-list-resp-content-type",
    "tdd-things-list-pagination tdd-things-list-pagination-limit",
    "tdd-things-list-pagination-header-nextlink tdd-things-list-pagination-header-nextlink-attr",
    "tdd-things-list-pagination-header-nextlink-base tdd-things-list-pagination-header-canonicallink",
    "tdd-things-list-pagination-order-default tdd-things-list-pagination-collection",
    "tdd-validation-syntactic tdd-validation-result tdd-validation-response tdd-validation-response-utf-8",
    "tdd-context-injection tdd-absolute-time tdd-registrationinfo-vocab-created",
    "tdd-registrationinfo-vocab-modified tdd-registrationinfo-vocab-expires",
    "tdd-registrationinfo-vocab-ttl tdd-registrationinfo-vocab-retrieved",
    "tdd-registrationinfo-expiry-purge tdd-notification tdd-notification-sse tdd-notification-event-id",
    "tdd-notification-event-types tdd-notification-filter-type tdd-notification-data",
    "tdd-notification-data-td-id tdd-notification-data-create-full tdd-notification-data-update-diff",
    "tdd-notification-data-update-id tdd-notification-data-delete-diff tdd-search-sparql",
    "tdd-search-sparql-version tdd-search-sparql-method-get tdd-search-sparql-method-post",
    "tdd-search-sparql-resp-select-ask tdd-search-sparql-resp-describe-construct tdd-search-sparql-error",
    "tdd-http-error-response-lang tdd-http-representation-alternate-output introduction-well-known-path",
    "introduction-well-known-thing-description exploration-directory-description-type",
    "exploration-server-http-method exploration-server-http-resp",
    "exploration-server-http-resp-content-type exploration-server-http-resp-json",
    "exploration-server-http-head tdd-things-read-only-auth exploration-secboot-401",
)
CHECKLIST = [identifier for line in _CHECKLIST_LINES for identifier in line.split()]


def assertion_id(test_name: str) -> str | None:
    """``test_tdd_things_update__if_match[x]`` → ``tdd-things-update``; None for tests not named after one."""
    match = re.match(r"test_((?:tdd|introduction|exploration)_[a-z0-9_]+?)(?:__\w+)?(?:\[.*\])?$", test_name)
    return match.group(1).replace("_", "-") if match else None


# -- factories and checks


def new_id(prefix: str = "urn:uuid:") -> str:
    return f"{prefix}{uuid.uuid4()}"


def mock_td(thing_id: str | None = None, **members: Any) -> dict[str, Any]:
    """The farshidtz suite's mock TD (TD 1.0 context), with an id when given."""
    td: dict[str, Any] = {
        "@context": TD10_CONTEXT,
        "title": "example thing",
        "securityDefinitions": {"nosec_sc": {"scheme": "nosec"}},
        "security": ["nosec_sc"],
    }
    if thing_id is not None:
        td["id"] = thing_id
    td.update(members)
    return td


def thing_path(thing_id: str) -> str:
    return f"/things/{thing_id}"


def create(client: httpx.Client, td: dict[str, Any]) -> httpx.Response:
    response = client.put(thing_path(td["id"]), json=td, headers=TD_JSON)
    assert response.status_code == 201, response.text
    return response


def retrieve(client: httpx.Client, thing_id: str) -> dict[str, Any]:
    response = client.get(thing_path(thing_id))
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def media_type(response: httpx.Response) -> str:
    return response.headers.get("content-type", "").split(";", 1)[0].strip()


def assert_problem(response: httpx.Response, status: int) -> dict[str, Any]:
    """RFC 7807 as the farshidtz suite checks it: status member = HTTP status, title = status text, UTF-8."""
    assert response.status_code == status, f"{response.status_code}: {response.text}"
    assert media_type(response) == "application/problem+json", response.headers
    problem: dict[str, Any] = response.json()
    response.content.decode("utf-8")
    assert problem["status"] == status
    assert problem["title"] == HTTPStatus(status).phrase
    assert isinstance(problem.get("detail"), str)
    assert problem["detail"]
    return problem


def assert_validation_problem(response: httpx.Response) -> list[dict[str, Any]]:
    problem = assert_problem(response, 400)
    errors = problem.get("validationErrors")
    assert isinstance(errors, list), problem
    assert errors, problem
    for error in errors:
        assert isinstance(error["field"], str)
        assert error["field"]
        assert isinstance(error["description"], str)
        assert error["description"]
    return errors


def links(response: httpx.Response) -> dict[str, dict[str, str]]:
    """Link headers by rel, each with its target (``url``) and parameters."""
    found: dict[str, dict[str, str]] = {}
    for value in response.headers.get_list("link"):
        for link in re.findall(r"<[^>]*>[^,]*", value):
            target, _, rest = link.partition(">")
            params = dict(re.findall(r';\s*([\w-]+)="?([^";]*)"?', rest))
            found[params.get("rel", "")] = {"url": target.lstrip("<"), **params}
    return found


# -- servers with their own database or settings


@pytest.fixture
def empty_server(postgres_admin_url: str) -> Iterator[ServerProcess]:
    """A server on an empty database of its own, for tests that need to know the whole collection."""
    with fresh_database(postgres_admin_url) as url, ServerProcess(url) as process:
        yield process


@pytest.fixture
def isolated_server(postgres_admin_url: str) -> Iterator[Callable[[dict[str, str]], ServerProcess]]:
    """Start a server with its own settings on a database of its own, so that what it registers (short ttls,
    purges) never shows up in the shared session database that other tests watch."""
    with contextlib.ExitStack() as stack:

        def start(env: dict[str, str]) -> ServerProcess:
            url = stack.enter_context(fresh_database(postgres_admin_url))
            return stack.enter_context(ServerProcess(url, env))

        yield start


# -- the ID,Status report


class _AssertionReport:
    def __init__(self, destination: str) -> None:
        self.destination = destination
        self.outcomes: dict[str, list[str]] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        identifier = assertion_id(report.location[2].split(".")[-1])
        if identifier is None:
            return
        if report.when == "call" or report.outcome != "passed":
            self.outcomes.setdefault(identifier, []).append(report.outcome)

    def csv_text(self) -> str:
        rows = io.StringIO()
        writer = csv.writer(rows, lineterminator="\n")
        writer.writerow(["ID", "Status"])
        for identifier in sorted(set(CHECKLIST) | set(self.outcomes)):
            outcomes = self.outcomes.get(identifier)
            if not outcomes:
                status = "untested"
            elif "failed" in outcomes:
                status = "fail"
            elif all(outcome == "skipped" for outcome in outcomes):
                status = "skipped"
            else:
                status = "pass"
            writer.writerow([identifier, status])
        return rows.getvalue()

    def pytest_sessionfinish(self) -> None:
        text = self.csv_text()
        if self.destination == "-":
            sys.stdout.write("\n" + text)
        else:
            Path(self.destination).write_text(text, encoding="utf-8")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--tdd-report",
        metavar="PATH",
        help="write an ID,Status CSV of the WoT Discovery assertions exercised ('-' for stdout)",
    )


def pytest_configure(config: pytest.Config) -> None:
    destination = config.getoption("--tdd-report", default=None)
    if destination:
        config.pluginmanager.register(_AssertionReport(destination), "tdd-report")
