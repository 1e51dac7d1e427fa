"""Test servers forked from a process that has already imported the server, as ``gunicorn --preload`` does.

Importing the server costs more CPU than anything else a test server does before it answers (about a second on this
machine's two cores), and the suite starts some 200 of them. A zygote, a child of the test process started
with ``python -m tests.support.zygote``, imports ``registry serve``'s modules once and then forks each server
on request: the child sets the server's environment, working directory and log, and runs the same CLI entry point as
``python -m registry serve`` does, in a process of its own (its own pid, signals, SPARQL worker and exit code).

``ForkedServer`` is the test side: the part of ``subprocess.Popen`` the tests use (pid, poll, wait, terminate, kill,
send_signal, returncode). The zygote reaps its children and reports their exit codes as ``Popen`` would (a signal as
its negative number).

Requests and answers are JSON lines on the zygote's stdin and stdout.
"""

from __future__ import annotations

import atexit
import contextlib
import faulthandler
import gc
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import IO, Any

_PRELOAD = ("registry.app", "registry.cli", "registry.cli.serve", "uvicorn", "uvicorn.main")


class Zygote:
    """One zygote per test process, started at the first server and ended with the test process (its stdin closes)."""

    _instance: Zygote | None = None
    _lock = threading.Lock()

    def __init__(self, cwd: Path) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.zygote"],
            cwd=cwd,
            env={**os.environ, **_coverage_environment()},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self._talk = threading.Lock()
        self.ask({"op": "ping"})

    @classmethod
    def shared(cls, cwd: Path) -> Zygote:
        with cls._lock:
            if cls._instance is None or cls._instance._process.poll() is not None:
                cls._instance = cls(cwd)
            return cls._instance

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self._process.stdin is not None
        assert self._process.stdout is not None
        with self._talk:
            self._process.stdin.write(json.dumps(request) + "\n")
            self._process.stdin.flush()
            line = self._process.stdout.readline()
        if not line:
            raise RuntimeError(f"the test zygote ended (exit code {self._process.poll()})")
        answer: dict[str, Any] = json.loads(line)
        if "error" in answer:
            raise RuntimeError(f"the test zygote refused {request['op']}: {answer['error']}")
        return answer

    def spawn(
        self,
        argv: list[str],
        env: dict[str, str],
        cwd: Path,
        log: Path,
        *,
        errors: Path | None = None,
        stdin: Path | None = None,
    ) -> ForkedServer:
        """``registry ARGV`` in a forked process: its output to ``log`` (and its errors to ``errors``, else ``log``
        too), its input from ``stdin`` (else nothing)."""
        request = {"op": "spawn", "argv": argv, "env": env, "cwd": str(cwd), "log": str(log)}
        request |= {"errors": str(errors or log), "stdin": str(stdin) if stdin else os.devnull}
        return ForkedServer(self, int(self.ask(request)["pid"]), argv)


def _coverage_environment() -> dict[str, str]:
    """What makes the zygote measure coverage as this test process does (nothing when it does not): coverage starts
    in a new interpreter that finds its configuration in ``COVERAGE_PROCESS_CONFIG``, and follows the zygote into the
    servers and commands it forks (``patch = ["fork", "_exit"]``). The processes those start in turn (SPARQL
    workers, log writers) are not measured: tracing them would cost more than the whole suite's CPU without it."""
    try:
        import coverage
    except ImportError:
        return {}
    current = coverage.Coverage.current()
    return {} if current is None else {"COVERAGE_PROCESS_CONFIG": current.config.serialize()}


#: Commands run in a new interpreter, as users run them, even where others are forked. ``registry import`` sends its
#: batches from a thread pool; forked from the zygote, it has ended by SIGSEGV with nothing written, in full runs
#: only (never in 60 calls in a row), and a crash that forking causes says nothing of the command.
_IN_NEW_INTERPRETERS = frozenset({"import"})


def run_registry(
    args: list[str],
    *,
    env: dict[str, str] | None = None,
    cwd: Path,
    input: str | None = None,
    timeout: float = 60.0,
    check: bool = False,
) -> subprocess.CompletedProcess[str]:
    """``subprocess.run([python, "-m", "registry", *args], capture_output=True, text=True)``, forked from the zygote
    (``REGISTRY_TEST_FRESH_INTERPRETERS`` runs a new interpreter instead)."""
    environment = dict(os.environ if env is None else env)
    if os.environ.get("REGISTRY_TEST_FRESH_INTERPRETERS") or _IN_NEW_INTERPRETERS.intersection(args):
        command = [sys.executable, "-m", "registry", *args]
        return subprocess.run(
            command, cwd=cwd, env=environment, input=input, capture_output=True, text=True, timeout=timeout, check=check
        )
    with tempfile.TemporaryDirectory(prefix="registry-cli-") as folder:
        out, err, given = Path(folder, "stdout"), Path(folder, "stderr"), Path(folder, "stdin")
        given.write_text(input or "")
        process = Zygote.shared(cwd).spawn(args, environment, cwd, out, errors=err, stdin=given)
        try:
            code = process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise
        result = subprocess.CompletedProcess(["registry", *args], code, out.read_text(), err.read_text())
    if check:
        result.check_returncode()
    return result


class ForkedServer:
    """A forked server process, seen through the part of ``subprocess.Popen`` the tests use."""

    def __init__(self, zygote: Zygote, pid: int, args: list[str]) -> None:
        self._zygote = zygote
        self.pid = pid
        self.args = args
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            code = self._zygote.ask({"op": "status", "pid": self.pid})["returncode"]
            self.returncode = None if code is None else int(code)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
            time.sleep(0.02)
        return code

    def send_signal(self, number: int) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, number)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def _reap(exited: dict[int, int]) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        exited[pid] = os.waitstatus_to_exitcode(status)


def _serve(requests: IO[str], answers: IO[str]) -> dict[str, Any] | None:
    """Answer requests until stdin closes (None: the zygote ends) or a fork made this process a server (its
    request)."""
    exited: dict[int, int] = {}
    children: set[int] = set()
    for line in requests:
        request = json.loads(line)
        _reap(exited)
        if request["op"] == "spawn":
            answers.flush()
            pid = os.fork()
            if pid == 0:
                return dict(request)
            children.add(pid)
            exited.pop(pid, None)  # an earlier child's status, should the system have reused its pid
            answer: dict[str, Any] = {"pid": pid}
        elif request["op"] == "status":
            answer = {"returncode": exited.pop(request["pid"], None)}
        else:
            answer = {}
        answers.write(json.dumps(answer) + "\n")
        answers.flush()
    for pid in children - exited.keys():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return None


def _become_server(request: dict[str, Any]) -> None:
    """In the forked child: the server's signals, environment, directory and output, then the CLI as ``python -m
    registry`` runs it."""
    for handled in (signal.SIGCHLD, signal.SIGTERM):
        signal.signal(handled, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    for number, path, flags in (
        (0, request["stdin"], os.O_RDONLY),
        (1, request["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT),
        (2, request["errors"], os.O_WRONLY | os.O_APPEND | os.O_CREAT),
    ):
        descriptor = os.open(path, flags, 0o600)
        os.dup2(descriptor, number)
        os.close(descriptor)
    sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the process's standard streams, open until it exits
    sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
    sys.argv = ["registry", *request["argv"]]
    faulthandler.enable()  # a crash of the child shows its Python stack in its errors, not only its signal

    _exit_as_python_would(_run_cli(request["argv"]))


def _run_cli(argv: list[str]) -> int:
    """The CLI's exit code, as the interpreter would compute it from how ``main`` ended."""
    from registry.cli import main

    try:
        main(args=argv, prog_name="registry")
    except SystemExit as ending:
        if ending.code is None or isinstance(ending.code, int):
            return ending.code or 0
        print(ending.code, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return -signal.SIGINT
    except BaseException:
        traceback.print_exc()
        return 1
    return 0


def _exit_as_python_would(code: int) -> None:
    """End the child as the interpreter ends (threads joined, ``atexit`` handlers run, output flushed, an interrupt
    ending it by its signal) but without tearing down the modules inherited from the zygote: that walk touches
    every inherited page, and costs more CPU than most CLI calls (about half a second each)."""
    threading._shutdown()  # type: ignore[attr-defined]  # what the interpreter runs first when it ends
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    if code == -signal.SIGINT:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code & 0xFF)


def _main() -> None:
    import importlib

    # The zygote's own SIGINT (a Ctrl-C of the test run reaches the whole process group) is the test process's to
    # handle: it closes the zygote's stdin.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for module in _PRELOAD:
        importlib.import_module(module)
    gc.freeze()  # the children's collections leave the inherited objects (and their pages) alone
    request = _serve(sys.stdin, sys.stdout)
    if request is not None:
        _become_server(request)


if __name__ == "__main__":
    _main()
