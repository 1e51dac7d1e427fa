"""The rate notation of the rate-limit settings (``REGISTRY_RATE_LIMIT_*``)."""

from __future__ import annotations

import pytest

from registry.config import ConfigError, Settings
from registry.rates import Rate, parse_rate


@pytest.mark.parametrize(
    ("text", "amount", "period"),
    [
        ("600/minute", 600, 60),
        ("10 per second", 10, 1),
        ("1per hour", 1, 3600),
        ("30/MINUTE", 30, 60),
        ("100/5 minutes", 100, 300),
        (" 5 / 2 hours ", 5, 7200),
        ("1000/day", 1000, 86400),
        ("2 per 3 days", 2, 259200),
    ],
)
def test_a_rate_is_an_amount_per_a_period(text: str, amount: int, period: int) -> None:
    assert parse_rate(text) == Rate(amount, period, text.strip())


@pytest.mark.parametrize(
    "text",
    [
        "",
        "600",
        "minute",
        "600/",
        "/minute",
        "10/s",
        "10/month",
        "10/fortnight",
        "1.5/second",
        "-1/second",
        "5/minute;10/hour",
        "5/minute, 10/hour",
        "10/secondss",
        "10 minute",
    ],
)
def test_anything_else_is_refused_naming_the_notation(text: str) -> None:
    with pytest.raises(ValueError, match=r"600/minute or 10 per second"):
        parse_rate(text)


@pytest.mark.parametrize("text", ["0/minute", "1/0 seconds"])
def test_a_rate_of_nothing_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        parse_rate(text)


def test_the_settings_check_their_rates_at_start_up() -> None:
    assert Settings.from_env({"REGISTRY_RATE_LIMIT_READS": " 600/minute "}).rate_limit_reads == "600/minute"
    assert Settings.from_env({"REGISTRY_RATE_LIMIT_READS": ""}).rate_limit_reads == ""
    with pytest.raises(ConfigError, match="REGISTRY_RATE_LIMIT_WRITES"):
        Settings.from_env({"REGISTRY_RATE_LIMIT_WRITES": "60 a minute"})
