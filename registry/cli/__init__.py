"""The ``registry`` command: run the directory (``serve``, ``migrate``) and talk to one."""

from __future__ import annotations

import sys

import click

from registry.cli import discovery, events, keys, query, serve, things
from registry.cli.common import JSON_HELP, TOKEN_HELP, URL_HELP, RegistryGroup
from registry.config import ConfigError


class _Main(RegistryGroup):
    """The ``registry`` group: a configuration the command cannot run with (a data directory another ``registry
    serve`` holds, no embedded PostgreSQL installed) is one ``Error:`` line, not a traceback."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except ConfigError as error:
            raise click.ClickException(str(error)) from None


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="lmos-registry")
@click.option("--url", envvar="REGISTRY_URL", show_envvar=True, help=URL_HELP)
@click.option("--json", "as_json", is_flag=True, help=JSON_HELP)
@click.option("--token", help=TOKEN_HELP)
def main(url: str | None, as_json: bool, token: str | None) -> None:
    """LMOS agent and tool registry: a W3C WoT Thing Description Directory on PostgreSQL.

    `serve` and `migrate` run a directory; every other command talks to a running one (--url or REGISTRY_URL,
    default http://127.0.0.1:8080), prints tables for people or JSON with --json, and exits 1 with the
    directory's problem detail when a request fails. --url, --json and --token go before or after the command.
    `registry COMMAND --help` explains each.

    Without REGISTRY_DATABASE_URL, `registry serve` runs an embedded PostgreSQL whose data lives in the user
    data directory (see --data-dir). Every option can also be set by a REGISTRY_* environment variable.
    """


for module in (serve, keys, things, discovery, query, events):
    for command in module.COMMANDS:
        main.add_command(command)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
