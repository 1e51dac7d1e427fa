"""watch: follow the directory's change events."""

from __future__ import annotations

import json
import sys

import click

from registry.cli.common import (
    client_options,
    connect,
    out,
)
from registry.cli.literal import json_text
from registry.client import EVENT_TYPES, KINDS, EventType, Kind


@click.command()
@click.argument("event_type", required=False, type=click.Choice(EVENT_TYPES))
@click.option("--diff", is_flag=True, help="Full TD on create, merge patch on update.")
@click.option("--kind", type=click.Choice(KINDS))
@click.option("--vendor")
@click.option("--capability")
@click.option("-q", "--query", "text", help="Free text in title or description.")
@click.option("--last-event-id", help="Replay the events after this one first (an event id printed before).")
@click.option("--count", type=click.IntRange(min=1), help="Stop after this many events.")
@client_options
def watch(
    event_type: EventType | None,
    diff: bool,
    kind: Kind | None,
    vendor: str | None,
    capability: str | None,
    text: str | None,
    last_event_id: str | None,
    count: int | None,
    url: str | None,
    as_json: bool,
) -> None:
    """Print change events as they happen (reconnects and resumes by itself).

    Once subscribed it says so on stderr ("watching ..."): every change after that line is printed.
    """
    seen = 0
    with (
        connect(url) as client,
        client.watch(
            event_type, diff=diff, kind=kind, vendor=vendor, capability=capability, q=text, last_event_id=last_event_id
        ) as events,
    ):
        click.echo(f"watching {client.base_url}/events/{event_type or ''} (Ctrl-C to stop)", err=True)
        for event in events:
            if as_json:
                click.echo(json_text(event, indent=None))
            else:
                line = f"{event.id or event.seq}\t{event.type}\t{event.thing_id}"
                out.print(line + (f"\t{json.dumps(event.data)}" if diff else ""))
            sys.stdout.flush()
            seen += 1
            if count is not None and seen >= count:
                return


COMMANDS = (watch,)
