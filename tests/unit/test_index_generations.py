"""Generations of the on-disk SPARQL index: the pointer names the one in use; those no worker holds are removed."""

from __future__ import annotations

import fcntl
from pathlib import Path

from registry.sparql.worker.generations import current_generation, make_current, next_generation, remove_unused


def generation(path: Path) -> Path:
    (path / "store").mkdir(parents=True)
    (path / "state.json").write_text("{}")
    return path


def test_the_base_directory_is_in_use_until_a_generation_is_named(tmp_path: Path) -> None:
    base = generation(tmp_path / "index")
    assert current_generation(base) == base
    newer = generation(next_generation(base))
    make_current(base, newer)
    assert current_generation(base) == newer
    make_current(base, base)
    assert current_generation(base) == base


def test_a_pointer_to_a_missing_or_foreign_directory_is_not_followed(tmp_path: Path) -> None:
    base = generation(tmp_path / "index")
    (tmp_path / "index.current").write_text("../elsewhere")
    assert current_generation(base) == base
    (tmp_path / "index.current").write_text("index~404")
    assert current_generation(base) == base


def test_unused_generations_go_and_held_ones_stay(tmp_path: Path) -> None:
    base = generation(tmp_path / "index")
    held = generation(next_generation(base))
    in_use = generation(next_generation(base))
    make_current(base, in_use)
    with (held / "lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a worker still has it open
        remove_unused(base)
        assert held.is_dir()
    assert in_use.is_dir()
    assert not (base / "store").exists()  # the base directory's index went, the directory stays
    assert base.is_dir()
    remove_unused(base)
    assert not held.exists()
    assert in_use.is_dir()
