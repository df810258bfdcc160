"""Running `gm`: in this process through `gm.cli.main` (fast), or as the installed command in its own process."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from collections.abc import Mapping
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

from gm.cli import main

INSTALLED = Path(sys.executable).parent / "gm"  # the console script pip installed beside this Python


@dataclass(frozen=True)
class Ran:
    """What `gm` did, named as subprocess.CompletedProcess names it."""

    returncode: int
    stdout: str
    stderr: str


def gm(*arguments: str | Path, stdin: str = "", env: Mapping[str, str] | None = None) -> Ran:
    """`gm ARGUMENTS` run in this process: `stdin` as its input, `env` over the environment, output captured."""
    out, err = io.StringIO(), io.StringIO()
    with (
        mock.patch.dict(os.environ, dict(env or {})),
        mock.patch.object(sys, "stdin", io.StringIO(stdin)),
        redirect_stdout(out),
        redirect_stderr(err),
    ):
        try:
            code = main([str(argument) for argument in arguments])
        except SystemExit as leaving:  # argparse's --help and --version leave this way
            code = leaving.code if isinstance(leaving.code, int) else 0
    return Ran(code, out.getvalue(), err.getvalue())


def installed_gm(
    *arguments: str | Path, stdin: str = "", env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The installed `gm` command, run as a process of its own."""
    assert INSTALLED.exists(), f"no gm command beside {sys.executable}: install the project (pip install -e .)"
    return subprocess.run(
        [str(INSTALLED), *map(str, arguments)],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def story_id_in(output: str) -> str:
    """The id of the story `gm play` says it started (or continues) in its output."""
    match = re.search(r"story ([0-9a-f]{32})", output)
    assert match, output
    return match.group(1)
