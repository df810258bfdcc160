"""A server checks a world once per content of its files, not once per story, and never serves a stale or broken one."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import gm.world.loading
from gm.errors import ProblemsError
from gm.world.loading import LoadedWorlds


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths `world_from_data` (the world's check) was run for."""
    seen: list[str] = []
    real = gm.world.loading.world_from_data

    def counted(world_data: object, dice_data: object, where: str) -> gm.world.loading.World:
        seen.append(where)
        return real(world_data, dice_data, where)

    monkeypatch.setattr(gm.world.loading, "world_from_data", counted)
    return seen


def retitle(folder: Path, title: str) -> None:
    data = json.loads((folder / "world.json").read_text())
    data["title"] = title
    (folder / "world.json").write_text(json.dumps(data))


def test_an_unchanged_world_is_checked_once_and_shared(harbor: Path, checks: list[str]) -> None:
    worlds = LoadedWorlds()
    first, second = worlds.load(harbor), worlds.load(harbor)
    assert first is second
    assert checks == [str(harbor)]


def test_an_edited_world_is_loaded_again_at_once(harbor: Path, checks: list[str]) -> None:
    worlds = LoadedWorlds()
    before = worlds.load(harbor)
    retitle(harbor, "The Harbour, Revised")
    after = worlds.load(harbor)
    assert (before.title, after.title) == ("The Harbour Job", "The Harbour, Revised")
    assert worlds.load(harbor) is after
    assert len(checks) == 2


def test_an_edited_dice_json_is_loaded_again(harbor: Path) -> None:
    worlds = LoadedWorlds()
    before = worlds.load(harbor)
    dice = json.loads((harbor / "dice.json").read_text())
    dice["checks"][0]["name"] = "A renamed attempt"
    (harbor / "dice.json").write_text(json.dumps(dice))
    after = worlds.load(harbor)
    assert (before.rules.checks[0].name, after.rules.checks[0].name) == ("Risky attempt", "A renamed attempt")


def test_a_world_broken_after_loading_is_refused_and_taken_again_once_mended(harbor: Path) -> None:
    worlds = LoadedWorlds()
    good = (harbor / "world.json").read_text()
    worlds.load(harbor)
    (harbor / "world.json").write_text('{"title": ')
    with pytest.raises(ProblemsError, match=r"world\.json"):
        worlds.load(harbor)
    (harbor / "world.json").write_text(good)
    assert worlds.load(harbor).title == json.loads(good)["title"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_a_fifo_named_world_json_is_refused_without_waiting(tmp_path: Path) -> None:
    folder = tmp_path / "fifo"
    folder.mkdir()
    os.mkfifo(folder / "world.json")
    with pytest.raises(ProblemsError, match="not a regular file"):
        LoadedWorlds().load(folder)


def test_worlds_past_the_bound_are_checked_again(tmp_path: Path, harbor: Path, checks: list[str]) -> None:
    other = tmp_path / "other"
    other.mkdir()
    for name in ("world.json", "dice.json"):
        (other / name).write_bytes((harbor / name).read_bytes())
    worlds = LoadedWorlds(size=1)
    worlds.load(harbor)
    worlds.load(other)  # the harbour is evicted
    worlds.load(harbor)
    assert checks == [str(harbor), str(other), str(harbor)]
