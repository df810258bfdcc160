"""The terminal chat at a real terminal (a pseudo-terminal): line editing and history, Ctrl-C, and leaving
after /end. `gm play --model rehearsal` runs as a process of its own, as a player runs it."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from gm.store import Store

UP, LEFT, BACKSPACE, CTRL_C = "\x1b[A", "\x1b[D", "\x7f", "\x03"


class Terminal:
    """`gm play` on a pseudo-terminal: what it printed, and keys typed into it."""

    def __init__(self, *arguments: str, home: Path) -> None:
        self.main, secondary = pty.openpty()
        environment = {**os.environ, "GM_HOME": str(home), "TERM": "xterm", "COLUMNS": "120", "LINES": "40"}
        environment.pop("GM_DATABASE_URL", None)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gm.cli", "play", *arguments],
            stdin=secondary,
            stdout=secondary,
            stderr=secondary,
            env=environment,
            close_fds=True,
            # A session of its own with the terminal as its controlling one, as a shell starts a program: Ctrl-C
            # reaches only it, never the test's own process (which a pseudo-terminal could otherwise become tied to).
            start_new_session=True,
            preexec_fn=_take_terminal,
        )
        os.close(secondary)
        self.seen = ""

    def pump(self, seconds: float) -> None:
        """Read what the chat printed within `seconds`, answering its cursor position requests as a terminal does."""
        ready, _, _ = select.select([self.main], [], [], seconds)
        if not ready:
            return
        try:
            got = os.read(self.main, 65536).decode("utf-8", "replace")
        except OSError:  # the process closed the terminal
            return
        for _ in range(got.count("\x1b[6n")):
            os.write(self.main, b"\x1b[1;1R")
        self.seen += got

    def read_until(self, pattern: str, seconds: float = 30) -> str:
        deadline = time.monotonic() + seconds
        while not re.search(pattern, plain(self.seen)):
            assert time.monotonic() < deadline, f"no {pattern!r} in: {plain(self.seen)[-800:]}"
            self.pump(0.2)
        return plain(self.seen)

    def prompted(self, times: int, seconds: float = 30) -> str:
        """Wait for the prompt to have been shown `times` times: keys typed before it would be echoed raw."""
        deadline = time.monotonic() + seconds
        while plain(self.seen).count("\n>") < times:
            assert time.monotonic() < deadline, f"no prompt #{times} in: {plain(self.seen)[-800:]}"
            self.pump(0.2)
        self.pump(0.3)
        return plain(self.seen)

    def type(self, keys: str) -> None:
        for key in keys if not key_is_sequence(keys) else [keys]:
            os.write(self.main, key.encode())
            time.sleep(0.02)

    def close(self) -> int:
        try:
            return self.process.wait(timeout=30)
        finally:
            os.close(self.main)


def _take_terminal() -> None:
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def key_is_sequence(keys: str) -> bool:
    return keys.startswith("\x1b")


def plain(text: str) -> str:
    """The terminal's text without its control sequences (colours, cursor moves)."""
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r", "", text)


@pytest.mark.subprocess
def test_line_editing_history_and_ctrl_c_at_the_prompt(tmp_path: Path, harbor: Path) -> None:
    terminal = Terminal(str(harbor), "--model", "rehearsal", home=tmp_path)
    terminal.prompted(1)
    terminal.type("I wait at the doorx")
    terminal.type(BACKSPACE)
    terminal.type(".\r")
    terminal.read_until(r"\(rehearsal\).*I wait at the door\.")
    terminal.prompted(2)
    terminal.type(UP)  # the line typed before, back for editing
    for _ in range(5):
        terminal.type(LEFT)
    terminal.type("long ")
    terminal.type("\r")
    terminal.read_until(r"\(rehearsal\).*I wait at the long door\.")
    seen = terminal.prompted(3)
    assert "^[[A" not in seen and "^[[D" not in seen  # the arrows edited the line; they were not printed
    terminal.type(CTRL_C)
    seen = terminal.read_until(r"Interrupted\. The story is saved; continue it with: gm play --story [0-9a-f]{32}")
    assert terminal.close() == 0 and "Traceback" not in seen and "error: interrupted" not in seen
    [story] = Store(f"sqlite:///{tmp_path / 'gm.db'}").stories()
    assert story.rounds == 2


@pytest.mark.subprocess
def test_leaving_after_end_says_how_to_read_the_story_and_an_unplayed_story_is_not_kept(
    tmp_path: Path, harbor: Path
) -> None:
    terminal = Terminal(str(harbor), "--model", "rehearsal", home=tmp_path)
    terminal.prompted(1)
    terminal.type("I wait.\r")
    terminal.read_until(r"\(rehearsal\)")
    terminal.prompted(2)
    terminal.type("/end\r")
    terminal.read_until(r"The story has ended")
    terminal.prompted(3)
    terminal.type("/quit\r")
    seen = terminal.read_until(r"The story has ended; read it with: gm show [0-9a-f]{32}")
    assert terminal.close() == 0 and "continue it with" not in seen
    unplayed = Terminal(str(harbor), "--model", "rehearsal", home=tmp_path)
    unplayed.prompted(1)
    unplayed.type("\x04")  # Ctrl-D at once: nothing was played
    seen = unplayed.read_until(r"No round was played, so the story was not kept\.")
    assert unplayed.close() == 0
