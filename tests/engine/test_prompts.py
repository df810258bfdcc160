"""The models' instructions: the top-level prompts/ folder, installed as gm.prompts, or an edited copy
named by GM_PROMPTS or --prompts; a missing or empty file is one clear error when gm starts."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest

from gm.engine import instructions as instructions_module
from gm.engine.instructions import PROMPT_NAMES, read_prompts, use_prompts
from gm.errors import PromptsError
from gm.store import Store
from gm.testing import reply
from tests.support.command_line import gm
from tests.support.paths import REPOSITORY
from tests.support.rounds import table

PROMPTS = REPOSITORY / "prompts"


@pytest.fixture
def edited(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An edited copy of prompts/; the prompts in use are put back after the test."""
    monkeypatch.setattr(instructions_module, "_active", None)
    copy = tmp_path / "my-prompts"
    shutil.copytree(PROMPTS, copy)
    (copy / "game_master.txt").write_text("You are a terse game master of the moors.\n", encoding="utf-8")
    return copy


def test_the_installed_prompts_are_the_top_level_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GM_PROMPTS", raising=False)
    prompts = read_prompts()
    assert set(prompts.texts) == set(PROMPT_NAMES) and prompts.where == "the installed prompts"
    for name in PROMPT_NAMES:
        assert prompts[name] == (PROMPTS / f"{name}.txt").read_text(encoding="utf-8").strip()
    assert not (Path(instructions_module.__file__).parent / "prompts").exists()  # gm/prompts/ is gone


def test_gm_prompts_names_an_edited_copy_the_game_master_is_given(
    edited: Path, store: Store, harbor: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GM_PROMPTS", str(edited))

    async def play() -> Any:
        async with table(store, [reply("Wind.")]) as t:
            await t.game.play(t.game.start_story(harbor), "I listen.")
            return t.master.requests[0]["messages"][0]["content"]

    system = asyncio.run(play())
    assert system.startswith("You are a terse game master of the moors.\n\n# World: The Harbour Job")


@pytest.mark.parametrize(
    ("spoil", "words"),
    [
        (lambda folder: (folder / "judge.txt").unlink(), "has no judge.txt; it needs game_master.txt, judge.txt"),
        (lambda folder: (folder / "memory_fold.txt").write_text(" \n\n"), "memory_fold.txt in the prompts folder"),
        (lambda folder: (folder / "memory_keeper.txt").write_bytes(b"\xff\xfe"), "cannot be read as UTF-8 text"),
        (lambda folder: shutil.rmtree(folder), "is not a folder"),
    ],
)
def test_a_missing_or_empty_prompt_file_is_one_error_at_the_start(
    edited: Path, harbor: Path, spoil: Any, words: str
) -> None:
    spoil(edited)
    with pytest.raises(PromptsError) as raised:
        use_prompts(edited)
    assert words in str(raised.value) and str(edited) in str(raised.value)
    assert instructions_module._active is None  # nothing half-chosen: the prompts in use stay as they were
    played = gm("play", harbor, "--model", "rehearsal", "--prompts", edited, stdin="I look around.\n")
    assert played.returncode == 2 and played.stdout == ""
    assert played.stderr.count("\n") == 1 and played.stderr.startswith("error: ") and words in played.stderr
    assert gm("stories").stdout.startswith("No stories yet")  # nothing was started
    served = gm("serve", "--prompts", edited, "--model", "x", "--base-url", "http://127.0.0.1:9/v1")
    assert served.returncode == 2 and words in served.stderr


def test_the_environment_variable_is_checked_at_the_start_too(edited: Path, harbor: Path) -> None:
    (edited / "game_master.txt").write_text("")
    played = gm("play", harbor, "--model", "rehearsal", stdin="I look around.\n", env={"GM_PROMPTS": str(edited)})
    assert (
        played.returncode == 2
        and "game_master.txt in the prompts folder" in played.stderr
        and "is empty" in played.stderr
    )


def test_play_with_an_edited_copy_on_the_command_line(edited: Path, harbor: Path) -> None:
    played = gm("play", harbor, "--model", "rehearsal", "--prompts", edited, stdin="I look around.\n")
    assert played.returncode == 0, played.stderr
    assert instructions_module.instructions("game_master") == "You are a terse game master of the moors."
