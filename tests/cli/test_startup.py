"""The quick commands import only what they use: `import gm.dice`, `gm --version`, `gm --help`, `gm roll`,
`gm odds` and `gm check` load no model client, database, web or validation library; jsonschema is
imported only to word what is wrong with a world file that is not valid.

Each runs as a process of its own (the installed `gm` script, as a user types it) with Python's
import log on (`PYTHONPROFILEIMPORTTIME`), and the test reads which packages it imported. How fast
they start is measured by bench/startup_bench.py, beside `python -c pass`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.command_line import INSTALLED

pytestmark = pytest.mark.subprocess

ROOT = Path(__file__).resolve().parents[2]
WORLD = ROOT / "worlds" / "harbour-heist"
# What a quick command must never load: the model client and its HTTP stacks, the database, the web
# server, pydantic (and its settings), the terminal's rich text, and jsonschema (a valid world needs none).
HEAVY = (
    "openai",
    "httpx",
    "aiohttp",
    "sqlalchemy",
    "sqlmodel",
    "psycopg",
    "alembic",
    "fastapi",
    "starlette",
    "uvicorn",
    "pydantic",
    "pydantic_core",
    "pydantic_settings",
    "rich",
    "jsonschema",
)


def imported_packages(command: list[str]) -> set[str]:
    """The top-level packages `command` imported, from the import log Python writes to stderr."""
    environment = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    ran = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=environment, timeout=120)
    assert ran.returncode == 0, ran.stderr[-2000:]
    packages = set()
    for line in ran.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            packages.add(name.split(".")[0])
    assert "gm" in packages or command[-1] == "pass", "the import log was not read: " + ran.stderr[-500:]
    return packages


@pytest.mark.parametrize(
    "arguments",
    [["--version"], ["--help"], ["roll", "1d20"], ["roll", "4d6kh3+2", "--json"], ["odds", "2d6"]],
    ids=lambda arguments: " ".join(arguments),
)
def test_quick_commands_import_no_heavy_library(arguments: list[str]) -> None:
    loaded = imported_packages([str(INSTALLED), *arguments])
    assert not loaded & set(HEAVY), f"gm {' '.join(arguments)} imported {sorted(loaded & set(HEAVY))}"


def test_gm_serve_imports_no_terminal_line_editor() -> None:
    """`gm serve` starts in every subprocess test and on every deploy: the chat's prompt_toolkit is not its own."""
    loaded = imported_packages([sys.executable, "-c", "import gm.cli._serve, gm.web.app"])
    assert "fastapi" in loaded
    assert "prompt_toolkit" not in loaded


def test_importing_the_dice_engine_imports_no_heavy_library() -> None:
    loaded = imported_packages([sys.executable, "-c", "import gm.dice; gm.dice.roll('1d20')"])
    assert "gm" in loaded
    assert not loaded & set(HEAVY), f"import gm.dice imported {sorted(loaded & set(HEAVY))}"


@pytest.mark.parametrize(
    "arguments",
    [["check", str(WORLD)], ["odds", str(WORLD), "attempt", "--target", "12"]],
    ids=["check", "odds of a check"],
)
def test_a_valid_world_is_checked_without_jsonschema(arguments: list[str]) -> None:
    loaded = imported_packages([str(INSTALLED), *arguments])
    assert not loaded & set(HEAVY), f"gm {' '.join(arguments)} imported {sorted(loaded & set(HEAVY))}"


def test_a_broken_world_gets_jsonschema_s_words(tmp_path: Path) -> None:
    """The quick yes (gm._quickschema) is a yes only: a file it refuses is told what is wrong by jsonschema."""
    world = tmp_path / "broken"
    shutil.copytree(WORLD, world)
    data = json.loads((world / "dice.json").read_text(encoding="utf-8"))
    data["checks"][0]["modifer"] = "nerve"
    (world / "dice.json").write_text(json.dumps(data), encoding="utf-8")
    environment = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    ran = subprocess.run(
        [str(INSTALLED), "check", str(world)], capture_output=True, text=True, cwd=ROOT, env=environment, timeout=120
    )
    assert ran.returncode == 1 and "did you mean 'modifier'?" in ran.stdout
    assert "jsonschema" in {
        line.rsplit("|", 1)[1].strip().split(".")[0] for line in ran.stderr.splitlines() if "|" in line
    }


def test_the_log_shows_a_heavy_command_for_what_it_is() -> None:
    """The reading of the log can fail: `gm play` without a model loads the engine before it refuses."""
    environment = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1", "OPENAI_BASE_URL": "", "GM_MODEL": ""}
    ran = subprocess.run(
        [str(INSTALLED), "play", str(WORLD)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=environment,
        timeout=120,
    )
    assert ran.returncode == 2 and "error:" in ran.stderr
    names = {line.rsplit("|", 1)[1].strip().split(".")[0] for line in ran.stderr.splitlines() if "import time:" in line}
    assert {"aiohttp", "sqlalchemy", "pydantic"} <= names
