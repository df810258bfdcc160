"""No server path reaches a client, and `gm serve` reads world files only inside its worlds folder (issue 40,
hole 10): broken worlds are named by their folder, symbolic links out of the folder are not followed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gm.store import Store
from tests.support.web import served_app


def test_broken_worlds_are_told_without_server_paths(store: Store, worlds: Path) -> None:
    (worlds / "broken").mkdir()
    (worlds / "broken" / "world.json").write_text("{")
    (worlds / "bad-dice").mkdir()
    (worlds / "bad-dice" / "world.json").write_text((worlds / "harbour" / "world.json").read_text())
    (worlds / "bad-dice" / "dice.json").write_text("[")
    with served_app(store, worlds, []) as (client, _):
        listed = client.get("/api/worlds")
        problems = {world["name"]: world["problem"] for world in listed.json()}
        assert problems["broken"] == (
            "the world 'broken' fails its check: world.json: line 1, column 2: expecting property name enclosed"
            " in double quotes"
        )
        assert (
            problems["bad-dice"] == "the world 'bad-dice' fails its check: dice.json: line 1, column 2: expecting value"
        )
        for name in ("broken", "bad-dice"):
            started = client.post("/api/stories", json={"world": name})
            assert started.status_code == 422 and started.json()["error"] == problems[name]
        for answer in [listed, *(client.post("/api/stories", json={"world": name}) for name in ("nope", "broken"))]:
            assert str(worlds) not in answer.text and str(worlds.resolve()) not in answer.text
            assert "/tmp" not in answer.text


@pytest.mark.parametrize("link", ["folder", "world.json", "dice.json"])
def test_links_out_of_the_worlds_folder_are_not_followed(store: Store, worlds: Path, tmp_path: Path, link: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    for name in ("world.json", "dice.json"):
        (outside / name).write_text((worlds / "harbour" / name).read_text())
    if link == "folder":
        os.symlink(outside, worlds / "linked")
    else:
        (worlds / "linked").mkdir()
        other = "dice.json" if link == "world.json" else "world.json"
        (worlds / "linked" / other).write_text((worlds / "harbour" / other).read_text())
        os.symlink(outside / link, worlds / "linked" / link)
    with served_app(store, worlds, []) as (client, _):
        assert [world["name"] for world in client.get("/api/worlds").json()] == ["harbour"]
        refused = client.post("/api/stories", json={"world": "linked"})
        assert refused.status_code == 404 and refused.json() == {"error": "there is no world 'linked'"}
        assert [model["id"] for model in client.get("/v1/models").json()["data"]] == ["gm/harbour", "gm/harbour:hidden"]
