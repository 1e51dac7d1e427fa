"""All configuration in one place: typed settings read from ``REGISTRY_*`` environment variables.

:class:`Settings` gathers the groups of settings declared in this package's modules (one module per group, in the
README's order: ``server``, ``connections``, ``database``, ``registrations``, ``search``, ``sparql``, ``events``,
``auth``, ``limits``, ``operations``). Every variable is listed (with its default) in the README's configuration
table, generated from the settings (:mod:`registry.config.readme`); keep the two in step.
"""

from registry.config.fields import (
    AUTH,
    CONNECTIONS,
    DATABASE,
    ENV_PREFIX,
    EVENTS,
    GROUPS,
    LIMITS,
    OPERATIONS,
    REGISTRATIONS,
    SEARCH,
    SERVER,
    SPARQL,
    ConfigError,
    factory,
    setting,
)
from registry.config.parsers import AUTH_MODES
from registry.config.readme import README_BEGIN, README_END, main, markdown, with_markdown
from registry.config.settings import PARSERS, Settings

__all__ = [
    "AUTH",
    "AUTH_MODES",
    "CONNECTIONS",
    "DATABASE",
    "ENV_PREFIX",
    "EVENTS",
    "GROUPS",
    "LIMITS",
    "OPERATIONS",
    "PARSERS",
    "README_BEGIN",
    "README_END",
    "REGISTRATIONS",
    "SEARCH",
    "SERVER",
    "SPARQL",
    "ConfigError",
    "Settings",
    "factory",
    "main",
    "markdown",
    "setting",
    "with_markdown",
]
