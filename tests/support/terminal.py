"""A child process on a pseudo-terminal that is its controlling terminal: prompts, progress bars and Ctrl-C as a
person meets them."""

from __future__ import annotations

import fcntl
import os
import re
import select
import subprocess
import termios
import time
from pathlib import Path

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _take_terminal() -> None:
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Terminal:
    """A child process on a pseudo-terminal; ``expect`` reads until a pattern shows, ``send`` types a line."""

    def __init__(self, args: list[str], env: dict[str, str], cwd: Path | None = None):
        master, slave = os.openpty()
        self.master, self.seen = master, ""
        # Its own session, with the terminal as its controlling terminal: Ctrl-C typed there reaches it as SIGINT.
        self.process = subprocess.Popen(args, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True, cwd=cwd,
                                        preexec_fn=_take_terminal)
        os.close(slave)

    def expect(self, pattern: str, timeout: float = 120) -> re.Match:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            found = re.search(pattern, ANSI.sub("", self.seen))
            if found:
                self.seen = ANSI.sub("", self.seen)[found.end():]
                return found
            ready, _, _ = select.select([self.master], [], [], 0.5)
            if ready:
                try:
                    self.seen += os.read(self.master, 65536).decode("utf-8", "replace")
                except OSError:  # the child closed the terminal
                    break
        raise AssertionError(f"no {pattern!r} within {timeout} s; the terminal showed:\n{ANSI.sub('', self.seen)[-3000:]}")

    def send(self, line: str) -> None:
        os.write(self.master, (line + "\n").encode())

    def interrupt(self) -> None:
        """Ctrl-C, as typed: the terminal turns it into SIGINT for the foreground process group."""
        os.write(self.master, b"\x03")

    def read_for(self, seconds: float) -> str:
        """Whatever the terminal shows during the next ``seconds`` (raw, escape sequences kept)."""
        end, got = time.monotonic() + seconds, ""
        while time.monotonic() < end:
            ready, _, _ = select.select([self.master], [], [], 0.1)
            if ready:
                try:
                    got += os.read(self.master, 65536).decode("utf-8", "replace")
                except OSError:
                    break
        self.seen += got
        return got

    def close(self) -> int:
        try:
            return self.process.wait(60)
        finally:
            os.close(self.master)
