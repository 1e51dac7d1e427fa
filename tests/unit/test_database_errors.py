"""Driver errors are translated precisely: what an operator reads in the log and a client in the 503 names the
cause (connections exhausted, a timeout, an unreachable server), never a bare "unavailable"."""

from __future__ import annotations

import asyncpg

from registry.errors import DatabaseUnavailable, StatementTimeout
from registry.startup import cause_of
from registry.store.database import translate


def _translated(error: BaseException) -> DatabaseUnavailable:
    try:
        raise error
    except BaseException as raised:
        domain = translate(raised)
        assert isinstance(domain, DatabaseUnavailable), domain
        try:
            raise domain from raised
        except DatabaseUnavailable as chained:
            return chained


def test_too_many_clients_names_max_connections() -> None:
    full = _translated(asyncpg.TooManyConnectionsError("sorry, too many clients already"))
    assert full.status == 503
    assert full.detail == "The database refuses more connections (max_connections reached); retry shortly"
    assert cause_of(full) == (
        "the database refuses more connections (max_connections reached): sorry, too many clients already"
    )


def test_a_driver_timeout_is_a_timeout_not_an_outage() -> None:
    slow = _translated(TimeoutError())
    assert isinstance(slow, StatementTimeout)
    assert "did not answer within 30 s" in slow.detail
    cancelled = _translated(asyncpg.QueryCanceledError("canceling statement due to statement timeout"))
    assert isinstance(cancelled, StatementTimeout)
    assert "statement timeout" in cancelled.detail


def test_an_unreachable_server_and_a_server_starting_up_say_so() -> None:
    refused = _translated(ConnectionRefusedError(111, "Connection refused"))
    assert cause_of(refused) == "the database is unreachable: [Errno 111] Connection refused"
    starting = _translated(asyncpg.CannotConnectNowError("the database system is starting up"))
    assert starting.detail.startswith("The database is starting up or shutting down")
    wrong_password = _translated(asyncpg.InvalidPasswordError("password authentication failed"))
    assert "refused the credentials" in wrong_password.detail
