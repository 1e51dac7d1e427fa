"""The bare floors the directory is measured against, served by uvicorn exactly as ``registry serve`` is served
(uvloop, httptools, one process):

- ``cached_app``: a Litestar handler answering ``GET /things/{id}`` with bytes held in memory (the documents,
  read once at start-up) — what a response cache could at best reach;
- ``asyncpg_app``: a Litestar handler reading the document with one asyncpg query per request (a pool of 10) —
  the cheapest way to answer from PostgreSQL.

    BENCH_DATABASE_URL=postgresql://… uvicorn --factory bench.floors:cached_app --loop uvloop --http httptools
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg
from litestar import Litestar, Response, get
from litestar.datastructures import State
from litestar.exceptions import NotFoundException

_TD_JSON = "application/td+json"


def _database_url() -> str:
    return os.environ["BENCH_DATABASE_URL"]


def cached_app() -> Litestar:
    documents: dict[str, bytes] = {}

    @asynccontextmanager
    async def loaded(_: Litestar) -> AsyncIterator[None]:
        connection = await asyncpg.connect(_database_url())
        try:
            for row in await connection.fetch("SELECT id, document_text FROM descriptions"):
                documents[row["id"]] = row["document_text"].encode()
        finally:
            await connection.close()
        yield

    @get("/things/{thing_id:str}", media_type=_TD_JSON)
    async def thing(thing_id: str) -> Response[bytes]:
        try:
            return Response(documents[thing_id], media_type=_TD_JSON)
        except KeyError:
            raise NotFoundException() from None

    return Litestar([thing], lifespan=[loaded])


def asyncpg_app() -> Litestar:
    @asynccontextmanager
    async def pooled(app: Litestar) -> AsyncIterator[None]:
        app.state.pool = await asyncpg.create_pool(_database_url(), min_size=10, max_size=10)
        try:
            yield
        finally:
            await app.state.pool.close()

    @get("/things/{thing_id:str}", media_type=_TD_JSON)
    async def thing(thing_id: str, state: State) -> Response[bytes]:
        text = await state.pool.fetchval("SELECT document_text FROM descriptions WHERE id = $1", thing_id)
        if text is None:
            raise NotFoundException()
        return Response(text.encode(), media_type=_TD_JSON)

    return Litestar([thing], lifespan=[pooled])
