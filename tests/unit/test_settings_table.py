"""Every setting has one group and one description, and the README's configuration tables are generated from them."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from registry.config import GROUPS, PARSERS, README_BEGIN, README_END, Settings, main, markdown, with_markdown

README = Path(__file__).resolve().parents[2] / "README.md"


def test_every_setting_has_a_group_a_description_and_a_parser() -> None:
    for field in dataclasses.fields(Settings):
        assert field.metadata.get("group") in GROUPS, f"{field.name}: declare it with setting(GROUP, default, doc)"
        assert field.metadata["doc"].strip(), f"{field.name} has no description"
        assert field.name in PARSERS, f"{field.name} has no parser: add it to PARSERS in its group's module"


def test_the_settings_are_declared_group_by_group_in_the_order_of_the_groups() -> None:
    groups = [field.metadata["group"] for field in dataclasses.fields(Settings)]
    assert groups == sorted(groups, key=GROUPS.index)


def test_the_readme_lists_every_setting_as_generated() -> None:
    readme = README.read_text()
    assert with_markdown(readme) == readme, (
        "README.md's configuration tables differ from the settings' descriptions in registry/config/: "
        "run `python -m registry.config --write README.md`"
    )
    for field in dataclasses.fields(Settings):
        assert f"| `REGISTRY_{field.name.upper()}` |" in readme


def test_the_tables_show_defaults_and_escape_cells() -> None:
    tables = markdown()
    assert "| `REGISTRY_PORT` | `8080` | TCP port (`--port`). |" in tables
    assert "| `REGISTRY_AUTH_JWT_ALGORITHMS` | `RS256,ES256` |" in tables
    assert "| `REGISTRY_SPARQL_INDEX_DIR` | `sparql-index` in `REGISTRY_DATA_DIR` |" in tables
    assert "| `REGISTRY_HEADER_TIMEOUT` | `10` |" in tables
    assert "| `REGISTRY_MANDATE_TTL` | `false` |" in tables
    assert "`jwt:<issuer>\\|<name>`" in tables  # a | inside a cell is escaped
    assert tables.count("### ") == len(GROUPS)


def test_the_command_writes_between_the_markers_and_keeps_the_rest(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"# Title\n\n{README_BEGIN}\nstale\n{README_END}\n\nAfter.\n")
    assert main(["--write", str(readme)]) == 0
    assert readme.read_text() == f"# Title\n\n{README_BEGIN}\n{markdown()}{README_END}\n\nAfter.\n"
    readme.write_text("# No markers\n")
    with pytest.raises(ValueError, match="markers"):
        main(["--write", str(readme)])
    assert main(["--bogus"]) == 2
