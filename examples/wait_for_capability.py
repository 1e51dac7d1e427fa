"""Wait until the directory can resolve a capability requirement, then print the chosen provider.

    python examples/wait_for_capability.py getWeather --range '^1.2' --url http://127.0.0.1:8080 --timeout 60

examples/weather_agent.py registers an agent that offers getWeather at version 1.2.0: started before or while this
waits, it ends the wait.

Subscribes to the change events of providers of the capability first (``watch`` returns once the directory has
subscribed it), then asks the directory to resolve the requirement (POST /api/v1/resolve), and again after every
change: a provider that appears in between is not missed, and one that appears in a version outside the range
does not end the wait. No sleeping, no polling: each unresolved answer is printed to stderr ("waiting (reason):
detail") and the next change event wakes it. Exits 1 with the directory's reason when the timeout passes first.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

import msgspec

from registry.client import AsyncRegistryClient, Requirement, Resolution


async def resolve(client: AsyncRegistryClient, requirement: Requirement) -> Resolution:
    return (await client.resolve([requirement])).results[0]


async def wait_until_resolved(client: AsyncRegistryClient, requirement: Requirement) -> Resolution:
    async with client.watch(capability=requirement.capability) as changes:
        while not (resolution := await resolve(client, requirement)).resolved:
            print(f"waiting ({resolution.reason}): {resolution.detail}", file=sys.stderr, flush=True)
            await anext(changes)  # a provider of the capability came, changed or left: resolve again
        return resolution


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("capability", help="capability id or name")
    parser.add_argument("--range", default="*", help="version range, e.g. '^1.2' or '>=1 <2' (default: any)")
    parser.add_argument("--strategy", choices=["highest", "lowest"], default="highest")
    parser.add_argument("--url", help="directory URL (default: REGISTRY_URL or http://127.0.0.1:8080)")
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args()
    requirement = Requirement(args.capability, range=args.range, strategy=args.strategy)
    async with AsyncRegistryClient(args.url) as client:
        try:
            resolution = await asyncio.wait_for(wait_until_resolved(client, requirement), args.timeout)
        except TimeoutError:
            last = await resolve(client, requirement)
            print(f"not resolved within {args.timeout:g} s: {last.reason}: {last.detail}", file=sys.stderr)
            return 1
    assert resolution.provider is not None
    provider = resolution.provider
    print(f"{args.capability} is offered by {provider.id} (version {provider.version})", flush=True)
    print(msgspec.json.format(msgspec.json.encode(resolution), indent=2).decode())
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
