"""Generations of the on-disk SPARQL index of one database, so that a worker can be replaced without a gap.

A worker holds its index (RocksDB) exclusively. To replace a worker whose query outlived its timeout while it
still serves the other queries, the worker writes a checkpoint of its index into a new generation directory (hard
links to the store's files, not a copy), its successor opens that one and catches up from the change
position the checkpoint holds, and only then is the old worker killed. The generation in use is named by a pointer
file beside them (``<base>.current``); without one, the base directory itself is the generation (as every index
was before generations). Generations that are neither in use nor held by a live worker are removed.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import time
from pathlib import Path

log = logging.getLogger(__name__)

#: Suffix of the pointer file naming the generation in use, beside the base directory.
POINTER = ".current"
#: Separates the base directory's name from a generation's number in a generation's name.
SEPARATOR = "~"
#: Lock file of a generation, held by the worker that has it open (see :meth:`RdfIndex.open`).
LOCK_FILE = "lock"
#: What a generation holds besides its lock: the store and its state (see :mod:`registry.sparql.worker.index`).
CONTENTS = ("store", "state.json")


def current_generation(base: Path) -> Path:
    """The generation in use: the one the pointer names, else the base directory."""
    try:
        name = (base.parent / (base.name + POINTER)).read_text().strip()
    except OSError:
        return base
    generation = base.parent / name
    if name.startswith(base.name + SEPARATOR) and "/" not in name and generation.is_dir():
        return generation
    return base


def next_generation(base: Path) -> Path:
    """A name for a new generation (not created)."""
    return base.parent / f"{base.name}{SEPARATOR}{time.time_ns()}"


def make_current(base: Path, generation: Path) -> None:
    """Name ``generation`` as the one in use (atomically: a restart finds either the old one or this one)."""
    pointer = base.parent / (base.name + POINTER)
    if generation == base:
        with contextlib.suppress(FileNotFoundError):
            pointer.unlink()
        return
    temporary = pointer.with_name(pointer.name + ".tmp")
    temporary.write_text(generation.name)
    os.replace(temporary, pointer)


def remove_unused(base: Path) -> None:
    """Remove the generations of ``base`` that are not in use and that no worker holds."""
    in_use = current_generation(base)
    for generation in [base, *base.parent.glob(f"{base.name}{SEPARATOR}*")]:
        if generation == in_use or not generation.is_dir() or _held(generation):
            continue
        if generation == base:  # the base directory keeps its lock file: only its contents go
            for name in CONTENTS:
                path = base / name
                if path.is_dir():
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    with contextlib.suppress(FileNotFoundError):
                        path.unlink()
        else:
            shutil.rmtree(generation, ignore_errors=True)
        log.info("removed the SPARQL index generation %s, no longer in use", generation.name)


def _held(generation: Path) -> bool:
    try:
        with (generation / LOCK_FILE).open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    return False


__all__ = ["current_generation", "make_current", "next_generation", "remove_unused"]
