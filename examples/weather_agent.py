"""An agent process that registers the WeatherAgent on startup, keeps its lease alive and deregisters on exit.

    python examples/weather_agent.py --url http://127.0.0.1:8080 --ttl 30

Its description is examples/weather-agent.td.json: the LMOS seed WeatherAgent (tests/fixtures/weather-agent.td.json)
at version 1.2.0 with its capability getWeather, so that

    python examples/wait_for_capability.py getWeather --range '^1.2'

resolves to it. SIGTERM or Ctrl-C deregisters at once; if the process is killed outright, the lease simply expires
after ttl.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
from pathlib import Path

from registry.client import AgentRegistration, AsyncRegistryClient

DESCRIPTION = Path(__file__).resolve().parent / "weather-agent.td.json"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="directory URL (default: REGISTRY_URL or http://127.0.0.1:8080)")
    parser.add_argument("--ttl", type=float, default=30.0, help="lease length in seconds")
    parser.add_argument("--description", type=Path, default=DESCRIPTION, help="the agent's Thing Description")
    args = parser.parse_args()
    document = json.loads(args.description.read_text())

    async with AsyncRegistryClient(args.url) as client, AgentRegistration(client, document, ttl=args.ttl) as agent:
        await agent.registered.wait()
        print(f"registered {agent.thing_id} (ttl {args.ttl:g} s); serving until SIGTERM", flush=True)
        # A real agent would serve its API here; this one just waits to be told to stop.
        await agent.wait_for_shutdown()
    print("deregistered; bye", flush=True)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    asyncio.run(main())
