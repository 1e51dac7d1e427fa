"""Child processes die with their parent.

``registry serve --workers N`` runs its server processes as children, and each server process runs its SPARQL
worker as a child. If a parent is killed outright (``kill -9``, the OOM killer), its children must not live on:
orphaned server processes would keep the port and their database connections, and a new ``registry serve`` could
not bind it. A parent names itself to its children in ``REGISTRY_PARENT_PID``; each child then asks the kernel for
a signal when its parent dies (Linux ``prctl(PR_SET_PDEATHSIG)``) and, on any system, watches its parent id from
a thread (a child whose parent died is adopted by another process), so it ends within a second even where the
kernel cannot tell it.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import sys
import threading

log = logging.getLogger(__name__)

#: The process id of the parent whose death ends this process (set by the parent for its children).
PARENT_PID_VARIABLE = "REGISTRY_PARENT_PID"
#: Linux prctl option: deliver a signal to this process when its parent thread dies.
PR_SET_PDEATHSIG = 1
#: Seconds between two checks of the parent id.
WATCH_INTERVAL = 1.0


def child_environment(environment: dict[str, str]) -> dict[str, str]:
    """``environment`` naming this process as the parent whose death ends the child."""
    return {**environment, PARENT_PID_VARIABLE: str(os.getpid())}


def die_with_parent(signal_number: int = signal.SIGTERM) -> bool:
    """End this process with ``signal_number`` when the parent named in ``REGISTRY_PARENT_PID`` dies (at once if
    it already has). Does nothing in the process that named itself, or without the variable. Returns whether it
    watches."""
    named = os.environ.get(PARENT_PID_VARIABLE, "")
    if not named.isdigit() or int(named) == os.getpid():
        return False
    parent = int(named)
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, signal_number, 0, 0, 0) != 0:
            log.warning("prctl(PR_SET_PDEATHSIG) failed (errno %d); watching the parent only", ctypes.get_errno())
    watcher = threading.Thread(target=_watch, args=(parent, signal_number), name="registry-parent-watch", daemon=True)
    watcher.start()
    return True


def _watch(parent: int, signal_number: int) -> None:
    stopped = threading.Event()
    while os.getppid() == parent:
        stopped.wait(WATCH_INTERVAL)
    log.warning("the parent process %d is gone; stopping", parent)
    os.kill(os.getpid(), signal_number)


__all__ = ["PARENT_PID_VARIABLE", "child_environment", "die_with_parent"]
