"""Every shell command of README.md and docs/*.md runs as written.

The blocks fenced as ``sh``, ``bash``, ``shell`` or ``console`` (in a ``console`` block: the lines after ``$ ``
and their continuation lines) run in document order, each block as one bash script with ``set -eo pipefail``: the
first command that fails fails the block and its test (shell variables last for one block). A block that needs
what a test run does not have is marked just before its fence with an HTML comment, ``<!-- needs: WHAT -->``, and
is reported as skipped with that reason; no other block is left out. A test of a later block runs the document's
earlier blocks first when they have not run yet.

What the test puts in place of what the documents assume (the substitutions):

- `127.0.0.1:8080`, `localhost:8080`: a free loopback port, one per document; `REGISTRY_URL` and `REGISTRY_PORT`
  name it.
- the embedded PostgreSQL: `REGISTRY_DATABASE_URL`, a fresh database per document (tests/e2e/test_quickstart.py
  runs the embedded one); `REGISTRY_DATA_DIR`: a temporary directory per document.
- the clone of the repository: a copy of it, the working directory of every block.
- `pip`, `python`: a virtual environment of the test's own that sees the test's packages after its own, so that
  `pip install .` installs the registry alone, and never into the test's environment.
- `registry serve …` (runs until stopped): the same command in the background; the block goes on once `/livez`
  answers, and the server is stopped with SIGTERM after the document's last block. A document that starts no
  `registry serve` but talks to a directory (curl, the examples, the CLI's client verbs) gets one before its
  first block.
- jobs a block starts with `&`: killed when the block ends, unless the block stopped them itself. Any other
  command that runs until stopped times out the block.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.servers import free_port, fresh_database

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: Fence info strings whose blocks are shell commands.
SHELLS = {"sh", "bash", "shell", "console"}
FENCE = re.compile(r"^```(?P<info>[^`\n]*)\n(?P<body>.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
NEEDS = re.compile(r"<!--\s*needs:\s*(?P<what>(?:(?!-->).)*?)\s*-->\s*\Z", re.DOTALL)
#: A `registry serve` command on a line of its own (a trailing `&` is the test's to add).
SERVE = re.compile(r"^(?P<indent>[ \t]*)(?P<command>registry[ \t]+serve\b.*?)[ \t]*&?[ \t]*$", re.MULTILINE)
#: Hosts and ports the documents name, and what each stands for.
ADDRESSES = ("127.0.0.1:8080", "localhost:8080")
#: What in a block talks to a running directory: HTTP clients, the examples, the registry's client verbs (all but
#: serve, migrate and keys, which work on the database), its address.
TALKS_TO_THE_DIRECTORY = re.compile(
    r"\b(?:curl|wget|http|httpie)\b|examples/|\bregistry\s+(?!serve\b|migrate\b|keys\b|-)\S|REGISTRY_URL|"
    + "|".join(map(re.escape, ADDRESSES))
)
#: Seconds a block may take (a `pip install` on a loaded machine included).
BLOCK_TIMEOUT = 300
#: Seconds a `registry serve` has to answer /livez, and to stop after SIGTERM.
SERVE_TIMEOUT = 120
STOP_TIMEOUT = 30

#: Runs before every block: the handling of `registry serve` and of the block's own background jobs.
PRELUDE = f"""
set -eo pipefail
__docs_serve() {{
    "$@" >>"$DOCS_SERVER_LOG" 2>&1 &
    local pid=$!
    disown "$pid"
    echo "$pid" >>"$DOCS_SERVER_PIDS"
    local tries=0
    until curl -sf -o /dev/null "$REGISTRY_URL/livez"; do
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "registry serve exited; its log:" >&2
            tail -n 40 "$DOCS_SERVER_LOG" >&2
            return 1
        fi
        if [ "$tries" -ge {SERVE_TIMEOUT * 10} ]; then
            echo "registry serve did not answer $REGISTRY_URL/livez within {SERVE_TIMEOUT} s" >&2
            return 1
        fi
        tries=$((tries + 1))
        sleep 0.1
    done
}}
trap 'jobs -p | xargs -r kill 2>/dev/null || true' EXIT
"""


@dataclass(frozen=True)
class Block:
    document: Path
    line: int
    script: str
    needs: str | None

    def __str__(self) -> str:
        name = self.document.relative_to(ROOT) if self.document.is_relative_to(ROOT) else self.document.name
        return f"{name}:{self.line}"

    @property
    def starts_a_server(self) -> bool:
        return bool(SERVE.search(self.script))

    @property
    def talks_to_the_directory(self) -> bool:
        return bool(TALKS_TO_THE_DIRECTORY.search(SERVE.sub("", self.script)))


def console_commands(body: str) -> str:
    """The commands of a ``console`` block: lines after ``$ ``, with their continuation lines."""
    commands: list[str] = []
    continued = False
    for line in body.splitlines():
        if continued or line.startswith("$ "):
            commands.append(line if continued else line[2:])
            continued = line.endswith("\\")
    return "\n".join(commands) + "\n"


def document_blocks(document: Path) -> list[Block]:
    text = document.read_text(encoding="utf-8")
    blocks = []
    for match in FENCE.finditer(text):
        words = match["info"].split()
        if not words or words[0] not in SHELLS:
            continue
        marker = NEEDS.search(text, 0, match.start())
        body = console_commands(match["body"]) if words[0] == "console" else match["body"]
        line = text.count("\n", 0, match.start()) + 1
        blocks.append(Block(document, line, body, marker["what"] if marker else None))
    return blocks


BLOCKS = [block for document in DOCUMENTS for block in document_blocks(document)]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _stop(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in pids:
        if _alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@dataclass
class DocumentRun:
    """The blocks of one document run so far, with the server, database and directories they share."""

    document: Path
    sandbox: Path
    env: dict[str, str]
    workdir: Path
    database: contextlib.ExitStack
    ran: list[Block] = field(default_factory=list)
    failed: Block | None = None

    @property
    def server_log(self) -> Path:
        return self.workdir / "serve.log"

    def server_pids(self) -> list[int]:
        pids = self.workdir / "serve.pids"
        return [int(pid) for pid in pids.read_text().split()] if pids.exists() else []

    def bash(self, script: str) -> subprocess.CompletedProcess[str]:
        process = subprocess.Popen(
            ["bash", "-c", PRELUDE + script],
            cwd=self.sandbox,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            output, errors = process.communicate(timeout=BLOCK_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            output, errors = process.communicate()
            errors += f"\n(killed after {BLOCK_TIMEOUT} s: a command that runs until stopped needs a trailing &)"
            return subprocess.CompletedProcess(process.args, -9, output, errors)
        return subprocess.CompletedProcess(process.args, process.returncode, output, errors)

    def start_server(self) -> None:
        result = self.bash("__docs_serve registry serve\n")
        assert result.returncode == 0, f"the server for {self.document.name} did not start:\n{result.stderr}"

    def run(self, block: Block) -> None:
        script = SERVE.sub(r"\g<indent>__docs_serve \g<command>", block.script)
        for address in ADDRESSES:
            script = script.replace(address, f"{address.split(':')[0]}:{self.env['REGISTRY_PORT']}")
        started = time.monotonic()
        result = self.bash(script)
        self.ran.append(block)
        if result.returncode != 0:
            self.failed = block
            log = self.server_log.read_text(errors="replace")[-3000:] if self.server_log.exists() else ""
            pytest.fail(
                f"{block}: exit status {result.returncode} after {time.monotonic() - started:.1f} s\n"
                f"--- the block\n{block.script}--- stdout\n{result.stdout[-4000:]}\n--- stderr\n"
                f"{result.stderr[-4000:]}\n--- the server's log (end)\n{log}"
            )

    def close(self) -> None:
        _stop(self.server_pids())
        self.database.close()


class Docs:
    """Runs the blocks of each document in order, one document at a time."""

    def __init__(self, sandbox: Path, venv: Path, postgres_admin_url: str, tmp: Path) -> None:
        self.sandbox = sandbox
        self.venv = venv
        self.postgres_admin_url = postgres_admin_url
        self.tmp = tmp
        self.current: DocumentRun | None = None

    def _open(self, document: Path) -> DocumentRun:
        workdir = self.tmp / document.stem
        workdir.mkdir()
        database = contextlib.ExitStack()
        url = database.enter_context(fresh_database(self.postgres_admin_url))
        port = free_port()
        env = {key: value for key, value in os.environ.items() if not key.startswith("REGISTRY_")}
        env.update(
            PATH=os.pathsep.join([str(self.venv / "bin"), str(Path(sys.executable).parent), env.get("PATH", "")]),
            VIRTUAL_ENV=str(self.venv),
            REGISTRY_URL=f"http://127.0.0.1:{port}",
            REGISTRY_PORT=str(port),
            REGISTRY_DATABASE_URL=url,
            REGISTRY_DATA_DIR=str(workdir / "data"),
            REGISTRY_LOG_LEVEL="warning",
            DOCS_SERVER_LOG=str(workdir / "serve.log"),
            DOCS_SERVER_PIDS=str(workdir / "serve.pids"),
        )
        env.pop("PYTHONPATH", None)
        run = DocumentRun(document, self.sandbox, env, workdir, database)
        runnable = [block for block in BLOCKS if block.document == document and block.needs is None]
        if not any(block.starts_a_server for block in runnable) and any(b.talks_to_the_directory for b in runnable):
            run.start_server()
        return run

    def run(self, block: Block) -> None:
        if self.current is None or self.current.document != block.document:
            self.close()
            self.current = self._open(block.document)
        current = self.current
        assert current.failed is None, f"{current.failed}, a block before this one, failed"
        earlier = [other for other in BLOCKS if other.document == block.document and other.line < block.line]
        for other in earlier:
            if other.needs is None and other not in current.ran:
                current.run(other)
        current.run(block)

    def close(self) -> None:
        if self.current is not None:
            self.current.close()
            self.current = None


def _throwaway_venv(path: Path) -> Path:
    """A virtual environment that sees the test's packages (after its own), so that installing the registry there
    brings no dependency and leaves the test's environment alone."""
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, timeout=300)
    [site_packages] = path.glob("lib/python*/site-packages")
    (site_packages / "_docs_run_test_packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return path


@pytest.fixture(scope="module")
def docs(postgres_admin_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Docs]:
    tmp = tmp_path_factory.mktemp("docs-run")
    sandbox = tmp / "repository"
    ignored = shutil.ignore_patterns(
        ".git", ".venv", "venv", "__pycache__", ".*_cache", "test-artifacts", "dist", "build", "*.egg-info"
    )
    shutil.copytree(ROOT, sandbox, ignore=ignored)
    runs = Docs(sandbox, _throwaway_venv(tmp / "venv"), postgres_admin_url, tmp)
    yield runs
    runs.close()


@pytest.mark.parametrize("block", BLOCKS, ids=str)
def test_documented_commands_run(block: Block, docs: Docs) -> None:
    if block.needs is not None:
        pytest.skip(f"marked as needing {block.needs}")
    docs.run(block)


def test_the_documents_have_commands_to_run() -> None:
    """The blocks are found: the README's quickstart among them, and every marked block says what it needs."""
    assert any(block.document.name == "README.md" and "registry serve" in block.script for block in BLOCKS)
    assert all(block.needs for block in BLOCKS if block.needs is not None)


def test_an_unmarked_block_that_fails_fails_and_a_marked_one_is_skipped(tmp_path: Path) -> None:
    document = tmp_path / "guide.md"
    document.write_text(
        "Runs:\n\n```console\n$ echo one \\\n    two\none two\n$ exit 3\n```\n\n"
        "<!-- needs: a cluster -->\n```sh\nkubectl apply -k .\n```\n\n```python\nprint()\n```\n"
    )
    failing, marked = document_blocks(document)
    assert (failing.script, failing.needs, failing.line) == ("echo one \\\n    two\nexit 3\n", None, 3)
    assert (marked.needs, marked.talks_to_the_directory) == ("a cluster", False)
    env = {**os.environ, "DOCS_SERVER_LOG": str(tmp_path / "log"), "DOCS_SERVER_PIDS": str(tmp_path / "pids")}
    run = DocumentRun(document, tmp_path, env | {"REGISTRY_PORT": "1"}, tmp_path, contextlib.ExitStack())
    with pytest.raises(pytest.fail.Exception, match=re.escape("guide.md:3: exit status 3")):
        run.run(failing)
