"""The head revision a server expects is read from the migration scripts without Alembic: it is Alembic's head."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from alembic.config import Config
from alembic.script import ScriptDirectory

from registry.store import migrations
from registry.store.migrations import head_revision, migrations_dir


def test_the_head_is_the_one_alembic_finds() -> None:
    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    assert head_revision() == ScriptDirectory.from_config(config).get_current_head()


def test_a_second_head_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "versions").mkdir()
    for name, down in (("a", None), ("b", "a"), ("c", "a")):
        (tmp_path / "versions" / f"{name}.py").write_text(f"revision: str = {name!r}\ndown_revision = {down!r}\n")
    monkeypatch.setattr(migrations, "migrations_dir", lambda: tmp_path)
    with pytest.raises(RuntimeError, match=r"2 head revisions, not one: \['b', 'c'\]"):
        head_revision()


def test_creating_the_application_does_not_import_alembic() -> None:
    code = "import sys, registry.app; registry.store.migrations.head_revision(); print('alembic' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
