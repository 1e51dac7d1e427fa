"""The frames between the server and its SPARQL worker (and between server processes relaying to it): a 4-byte
length, then msgpack. Kept apart from :mod:`registry.sparql.worker.client` so that the worker does not import the
server's modules (metrics, the web framework): a worker started ahead as a standby is ready sooner."""

from __future__ import annotations

import asyncio
import struct
from typing import Any

import msgspec

_HEADER = struct.Struct(">I")


async def read_frame(reader: asyncio.StreamReader) -> Any:
    header = await reader.readexactly(_HEADER.size)
    return msgspec.msgpack.decode(await reader.readexactly(_HEADER.unpack(header)[0]))


def frame(message: Any) -> bytes:
    payload = msgspec.msgpack.encode(message)
    return _HEADER.pack(len(payload)) + payload


__all__ = ["frame", "read_frame"]
