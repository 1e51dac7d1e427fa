"""Wait until some agent or tool offers a capability, then resolve it.

    python examples/wait_for_capability.py getWeather --url http://127.0.0.1:8080 --timeout 60

Subscribes to the directory's events filtered by capability first, then looks at what is already registered,
so a provider that appears in between is not missed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from registry.client import AsyncRegistryClient, ProblemError
from registry.events.filters import capabilities_of


async def already_registered(client: AsyncRegistryClient, capability: str) -> str | None:
    for document in await client.list():
        if capability in capabilities_of(document):
            return str(document["id"])
    return None


async def first_provider(client: AsyncRegistryClient, capability: str) -> str:
    events = client.events("thing_created", capability=capability)
    waiting = asyncio.ensure_future(anext(events))
    await asyncio.sleep(0.2)  # let the subscription reach the directory before looking at the current state
    try:
        found = await already_registered(client, capability)
        return found if found is not None else (await waiting).thing_id
    finally:
        waiting.cancel()
        await events.aclose()


async def resolve(client: AsyncRegistryClient, capability: str, provider: str) -> Any:
    try:
        return await client.resolve([{"capability": capability}])
    except ProblemError as error:
        if error.status not in (404, 405):
            raise
        return {"capability": capability, "provider": await client.get(provider)}  # directory without /resolve


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("capability")
    parser.add_argument("--url", help="directory URL (default: REGISTRY_URL or http://127.0.0.1:8080)")
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args()
    async with AsyncRegistryClient(args.url) as client:
        provider = await asyncio.wait_for(first_provider(client, args.capability), args.timeout)
        print(f"{args.capability} is offered by {provider}", flush=True)
        print(json.dumps(await resolve(client, args.capability, provider), indent=2))


if __name__ == "__main__":
    asyncio.run(main())
