"""Provably fair dice: the derivation as documented, its uniformity, and fair stories played, revealed and
checked through the library, the command line and the API (on SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import math
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gm.cli import main
from gm.engine.transcript import transcript
from gm.errors import NotFair, StoryBusy
from gm.integrity import fair
from gm.integrity.audit import audit
from gm.integrity.seeds import reveal
from gm.store import Store, Story
from gm.testing import call, reply
from tests.support.rounds import narrate_roll, roll_mara, table
from tests.support.web import served_app

KEY = bytes(range(32))
STORY = "0123456789abcdef0123456789abcdef"


def documented_face(key: bytes, story: str, roll: int, die: int, sides: int) -> int:
    """The face as gm.integrity.fair's docstring and docs/integrity.md describe it, written again from their words."""
    limit = 2**32 - (2**32 % sides)
    block = 0
    while True:
        digest = hmac.new(key, f"gm-dice:{story}:{roll}:{die}:{block}".encode(), hashlib.sha256).digest()
        for at in range(0, 32, 4):
            word = int.from_bytes(digest[at : at + 4], "big")
            if word < limit:
                return word % sides + 1
        block += 1


def test_the_faces_are_derived_as_documented() -> None:
    for sides in (2, 6, 20, 100, 1000):
        for roll in (1, 2, 77):
            for die in (0, 1, 5):
                assert fair.face(KEY, STORY, roll, die, sides) == documented_face(KEY, STORY, roll, die, sides)
    # Dice are numbered across the terms of a roll, in the order written, dropped dice too.
    assert fair.derive_faces(KEY, STORY, 3, "4d6kh3+1d8-2") == [
        [documented_face(KEY, STORY, 3, die, 6) for die in range(4)],
        [documented_face(KEY, STORY, 3, 4, 8)],
    ]


def test_a_rejected_word_moves_on_to_the_next() -> None:
    """With sides just over 2^31, about half of all words are rejected: the derivation must skip them, not bias."""
    sides = 2**31 + 1
    faces = [fair.face(KEY, STORY, roll, 0, sides) for roll in range(1, 200)]
    assert faces == [documented_face(KEY, STORY, roll, 0, sides) for roll in range(1, 200)]
    assert all(1 <= face <= sides for face in faces)


def test_the_seed_the_commitment_and_the_players_seed() -> None:
    seed = fair.new_seed()
    assert len(seed) == 64 and seed != fair.new_seed()
    assert fair.commitment(seed) == hashlib.sha256(bytes.fromhex(seed)).hexdigest()
    assert fair.key_for(seed, None) == bytes.fromhex(seed)
    mixed = fair.key_for(seed, "lucky 7")
    assert mixed == hmac.new(bytes.fromhex(seed), b"gm-player-seed:lucky 7", hashlib.sha256).digest()
    assert fair.derive_faces(mixed, STORY, 1, "10d20") != fair.derive_faces(bytes.fromhex(seed), STORY, 1, "10d20")
    assert fair.derive_faces(mixed, STORY, 1, "10d20") != fair.derive_faces(mixed, "another" + STORY, 1, "10d20")


@pytest.mark.parametrize(
    ("given", "words"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("x" * 201, "201 characters long, at most 200"),
        ("bell\x07", "control character (U+0007) at column 5"),
        ("right\u202eleft", "control character (U+202E) at column 6"),
    ],
)
def test_a_players_seed_that_cannot_be_used(given: str, words: str) -> None:
    with pytest.raises(fair.PlayerSeedError) as caught:
        fair.check_player_seed(given)
    assert words in str(caught.value)


# ---- uniformity ----

SAMPLES = 300_000
Derive = Callable[[bytes, str, int, int, int], int]


def chi_square_limit(degrees: int) -> float:
    """The chi-square value exceeded by chance once in a thousand (Wilson-Hilferty approximation)."""
    z = 3.0902  # the standard normal's 0.999 quantile
    return degrees * (1 - 2 / (9 * degrees) + z * math.sqrt(2 / (9 * degrees))) ** 3


def uniform(derive: Derive, sides: int, samples: int = SAMPLES) -> tuple[bool, float]:
    """Pearson's chi-square test of equal chances over faces derived for many rolls and dice."""
    counts = Counter(derive(KEY, STORY, 1 + index // 4, index % 4, sides) for index in range(samples))
    expected = samples / sides
    statistic = sum((counts.get(face, 0) - expected) ** 2 / expected for face in range(1, sides + 1))
    return statistic < chi_square_limit(sides - 1), statistic


def modulo_biased(key: bytes, story: str, roll: int, die: int, sides: int) -> int:
    """A tempting shortcut: one byte of the digest modulo the sides, no rejection (faces 1-4 of a d6 win)."""
    digest = hmac.digest(key, f"gm-dice:{story}:{roll}:{die}:0".encode(), "sha256")
    return digest[0] % sides + 1


@pytest.mark.slow
@pytest.mark.parametrize("sides", [6, 20, 100])
def test_the_faces_are_uniform(sides: int) -> None:
    accepted, statistic = uniform(fair.face, sides)
    assert accepted, f"chi-square {statistic:.1f} over {sides - 1} degrees of freedom"


@pytest.mark.slow
def test_the_uniformity_test_catches_a_biased_derivation() -> None:
    accepted, statistic = uniform(modulo_biased, 6)
    assert not accepted, f"a byte modulo 6 favours 1-4 by 1/42, yet chi-square was only {statistic:.1f}"


# ---- fair stories ----


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def test_a_fair_story_rolls_from_its_seed_and_reveals_it(store: Store, harbor: Path) -> None:
    script = [roll_mara(), narrate_roll(), call("roll_dice", {"notation": "3d6", "reason": "x"}), reply("Done.")]
    script += [roll_mara(), narrate_roll("Later.")]

    async def play() -> Any:
        # The game's own dice (one face, a 1) are never used: a fair story's dice come from its seed.
        async with table(store, script, faces=[1]) as t:
            story = t.game.start_story(harbor, fair=True, player_seed="Mara's lucky coin")
            first = await t.game.play(story, "I pick the lock.")
            second = await t.game.play(story, "I roll some dice.")
            secret = transcript(store, story)
            revealed = reveal(store, story)
            third = await t.game.play(story, "Again, the next door.")
            return story, [first, second, third], secret, revealed

    story, results, secret, revealed = run(play())
    seeds = store.seeds(story)
    assert secret.story.fair and secret.story.commitment == seeds[0].commitment == revealed.revealed.commitment
    assert [s.seed for s in secret.integrity.seeds] == [None] and seeds[0].seed not in json.dumps(
        secret.model_dump(mode="json")
    )  # the secret never left the database before the reveal
    assert revealed.revealed.seed == seeds[0].seed and (revealed.revealed.first_roll, revealed.revealed.last_roll) == (
        1,
        2,
    )
    assert revealed.next.commitment == seeds[1].commitment and revealed.next.first_roll == 3
    rolls = [roll for result in results for roll in result.rolls]
    assert [(roll.seq, roll.seed_epoch) for roll in rolls] == [(1, 0), (2, 0), (3, 1)]
    for roll in rolls:
        key = fair.key_for(seeds[roll.seed_epoch or 0].seed, "Mara's lucky coin")
        assert roll.faces == fair.derive_faces(key, story, roll.seq or 0, roll.notation)
    report = audit(transcript(store, story))
    assert report.ok, report.mismatches
    assert (report.derived, report.unrevealed) == (2, 1)


def test_a_reveal_waits_for_the_round_and_needs_a_fair_story(store: Store, harbor: Path) -> None:
    async def play() -> Any:
        async with table(store, []) as t:
            return t.game.start_story(harbor, fair=True), t.game.start_story(harbor)

    fair_story, plain_story = run(play())
    assert store.take_lease(fair_story, "a round", 60)
    with pytest.raises(StoryBusy, match="being played"):
        reveal(store, fair_story)
    store.release_lease(fair_story, "a round")
    with pytest.raises(NotFair, match="does not use fair dice"):
        reveal(store, plain_story)
    assert reveal(store, fair_story).next.epoch == 1


def gm(*arguments: str | Path, env: dict[str, str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    """`gm` as a real process (for `gm play`, which reads the player's lines from stdin)."""
    return subprocess.run(
        [sys.executable, "-m", "gm.cli", *map(str, arguments)],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )


def gm_here(capsys: pytest.CaptureFixture[str], *arguments: str | Path) -> tuple[int, str, str]:
    """`gm` run in this process (faster than a new one); its exit code, stdout and stderr."""
    code = main([str(argument) for argument in arguments])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.slow
@pytest.mark.subprocess
def test_the_command_line_plays_reveals_and_audits_a_fair_story(
    harbor: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    played = gm(
        "play",
        harbor,
        "--fair",
        "--player-seed",
        "coin",
        "--model",
        "rehearsal",
        env={"GM_HOME": str(home)},
        stdin="I look for what is hidden.\n",
    )
    assert played.returncode == 0, played.stderr
    monkeypatch.setenv("GM_HOME", str(home))
    story = json.loads(gm_here(capsys, "stories", "--json")[1])[0]
    assert story["fair"] is True and f"the seed's commitment is {story['commitment']}" in played.stdout
    shown = gm_here(capsys, "show", story["id"])[1]
    assert f"Fair dice: the next rolls' seed has the commitment {story['commitment']}" in shown
    assert "mixed with the player's seed 'coin'" in shown

    code, out, err = gm_here(capsys, "reveal", story["id"], "--json")
    assert code == 0, err
    seed = json.loads(out)["revealed"]
    assert fair.commitment(seed["seed"]) == story["commitment"] == seed["commitment"]
    assert seed["seed"] in gm_here(capsys, "show", story["id"])[1]

    code, out, err = gm_here(capsys, "audit", story["id"])
    assert code == 0, out + err
    assert "checks out" in out and "1 fair roll derived again" in out
    exported = tmp_path / "story.json"
    exported.write_text(gm_here(capsys, "show", story["id"], "--json")[1])
    monkeypatch.setenv("GM_HOME", str(tmp_path / "elsewhere"))  # no database needed
    code, out, _ = gm_here(capsys, "audit", "--file", exported, "--json")
    assert code == 0 and json.loads(out)["derived"] == 1


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        (["--player-seed", "coin"], "--player-seed is for a story with fair dice: add --fair"),
        (["--fair", "--player-seed", "a\x1bb"], "control character (U+001B) at column 2"),
    ],
)
def test_the_command_line_refuses_a_bad_fair_start(
    harbor: Path, capsys: pytest.CaptureFixture[str], arguments: list[str], words: str
) -> None:
    code, _, err = gm_here(capsys, "play", harbor, *arguments, "--model", "rehearsal")
    assert code == 2 and err.count("\n") == 1 and words in err, err
    assert Store().stories() == []


def test_revealing_a_story_without_fair_dice_is_one_line(harbor: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = Store()
    story = store.create_story(Story(title="Plain", world_data={}, settings={})).id
    code, _, err = gm_here(capsys, "reveal", story)
    assert code == 2 and err == f"error: story '{story}' does not use fair dice, so it has no seed to reveal\n"
    code, _, err = gm_here(capsys, "reveal", "0" * 32)
    assert code == 2 and err == f"error: there is no story '{'0' * 32}'; gm stories lists them\n"


def test_the_api_starts_reveals_and_audits_a_fair_story(store: Store, worlds: Path) -> None:
    with served_app(store, worlds, [roll_mara(), narrate_roll()]) as (client, _):
        answer = client.post("/api/stories", json={"world": "harbour", "fair": True, "player_seed": "coin"})
        assert answer.status_code == 201, answer.text
        story = answer.json()["story"]
        auth = {"Authorization": f"Bearer {answer.json()['token']}"}
        assert story["fair"] is True and len(story["commitment"]) == 64
        played = client.post(f"/api/stories/{story['id']}/messages", json={"text": "I pick the lock."}, headers=auth)
        assert played.status_code == 200, played.text
        secret = store.seeds(story["id"])[0].seed
        before = client.get(f"/api/stories/{story['id']}", headers=auth).text + played.text
        assert secret not in before and "player_seed" in before  # the seed stays secret until revealed
        assert client.post(f"/api/stories/{story['id']}/reveal").status_code == 401
        revealed = client.post(f"/api/stories/{story['id']}/reveal", headers=auth)
        assert revealed.status_code == 200, revealed.text
        assert fair.commitment(revealed.json()["revealed"]["seed"]) == story["commitment"]
        shown = client.get(f"/api/stories/{story['id']}", headers=auth).json()
        assert shown["story"]["commitment"] == revealed.json()["next"]["commitment"] != story["commitment"]
        assert shown["integrity"]["player_seed"] == "coin"
        audited = client.get(f"/api/stories/{story['id']}/audit", headers=auth)
        assert audited.status_code == 200 and audited.json()["ok"] is True and audited.json()["derived"] == 1

        plain = client.post("/api/stories", json={"world": "harbour"}).json()
        refused = client.post(
            f"/api/stories/{plain['story']['id']}/reveal", headers={"Authorization": f"Bearer {plain['token']}"}
        )
        assert refused.status_code == 409 and "does not use fair dice" in refused.json()["error"]
        for body, status in [
            ({"world": "harbour", "player_seed": "coin"}, 400),  # a player's seed without fair dice
            ({"world": "harbour", "fair": True, "player_seed": "a\x00b"}, 400),
            ({"world": "harbour", "fair": True, "player_seed": "x" * 201}, 422),
            ({"world": "harbour", "fair": "maybe"}, 422),
        ]:
            bad = client.post("/api/stories", json=body)
            assert bad.status_code == status and list(bad.json()) == ["error"], (body, bad.text)
