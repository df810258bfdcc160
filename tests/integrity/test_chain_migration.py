"""The integrity migration: a story written before the chain existed is chained from its first roll onward,
checks out, and goes on growing its chain; on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from gm.engine.transcript import transcript
from gm.integrity.audit import audit
from gm.store import Store, make_engine
from gm.store.migrations import upgrade
from gm.transcript.chain import genesis, roll_hash
from gm.transcript.shapes import RollPublic
from tests.support.rounds import narrate_roll, roll_mara, table

WORLD = {
    "title": "Old",
    "premise": "A harbour.",
    "characters": [{"name": "Mara", "role": "player", "variables": {"skill": 3}}],
}
DICE = {
    "checks": [
        {
            "key": "attempt",
            "name": "Risky attempt",
            "use": "Anything risky.",
            "dice": "1d20",
            "compare": "over",
            "modifier": "skill",
            "bands": [
                {"label": "Failure", "max": -1, "result": "failed"},
                {"label": "Success", "min": 0, "result": "succeeded"},
            ],
        }
    ]
}


def old_roll(attempt: str, face: int) -> dict[str, Any]:
    value = face + 3 - 12
    return {
        "story_id": "old",
        "attempt_id": attempt,
        "round_number": 1,
        "kind": "check",
        "character": "Mara",
        "check_key": "attempt",
        "notation": "1d20",
        "reason": "the lock",
        "target": 12,
        "modifier": 3,
        "faces": [[face]],
        "total": face,
        "successes": None,
        "value": value,
        "band": "Success" if value >= 0 else "Failure",
        "result": "succeeded" if value >= 0 else "failed",
        "critical": False,
        "void": False,
        "line": f"1d20 ({face}) = {face}",
    }


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    made = make_engine(database_url)
    yield made
    made.dispose()


def write_old_story(engine: Engine) -> None:
    """A story as gm wrote it before the chain: round 1 failed once after a roll (re-rolled, as gm then did)."""
    upgrade(engine, "story_token")
    failed, accepted = old_roll("a1", 4), old_roll("a2", 15)
    with engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO stories (id, title, world_data, dice_data, settings, created_at, rounds, summary, "
                "summary_through) VALUES ('old', 'Old', :world, :dice, '{\"dice\": \"shown\"}', "
                "'2025-01-02 03:04:05', 1, '', 0)"
            ),
            {"world": json.dumps(WORLD), "dice": json.dumps(DICE)},
        )
        for attempt, status in (("a1", "failed"), ("a2", "accepted")):
            connection.execute(
                text(
                    "INSERT INTO attempts (id, story_id, round_number, status, regenerating, started_at) "
                    "VALUES (:id, 'old', 1, :status, false, '2025-01-02 03:04:05')"
                ),
                {"id": attempt, "status": status},
            )
        for roll in (failed, accepted):
            columns = ", ".join(roll)
            values = ", ".join(f":{name}" for name in roll)
            roll["id"] = connection.execute(
                text(
                    f"INSERT INTO rolls ({columns}, created_at) VALUES ({values}, '2025-01-02 03:04:05') RETURNING id"
                ),
                {**roll, "faces": json.dumps(roll["faces"])},
            ).scalar_one()
        copy = {key: value for key, value in accepted.items() if key != "story_id"}
        outcomes = [{"character": "Mara", "result": "succeeded", "roll": accepted["id"]}]
        connection.execute(
            text(
                "INSERT INTO rounds (story_id, number, attempt_id, player_text, narration, outcomes, rolls, "
                "refusals, memory_written, created_at) VALUES ('old', 1, 'a2', 'I pick the lock.', 'It opens.', "
                ":outcomes, :rolls, '[]', true, '2025-01-02 03:04:05')"
            ),
            {"outcomes": json.dumps(outcomes), "rolls": json.dumps([copy])},
        )


def test_an_old_story_is_chained_from_its_first_roll_and_checks_out(
    database_url: str, engine: Engine, harbor: Path
) -> None:
    write_old_story(engine)
    store = Store(database_url)  # upgrades to the newest revision
    try:
        chained = store.story_rolls("old")
        assert [(roll.faces, roll.seq) for roll in chained] == [([[4]], 1), ([[15]], 2)]
        assert chained[0].prev_hash == genesis("old")
        first_hash = roll_hash(RollPublic.from_stored(chained[0]).model_dump(mode="json"))
        assert chained[1].prev_hash == first_hash
        story = store.story("old")
        assert (story.chain_length, story.legacy_rolls) == (2, 2)
        assert story.chain_head == roll_hash(RollPublic.from_stored(chained[1]).model_dump(mode="json"))
        # Its round-1 check was rolled twice, as gm did before a round's rolls outlived its attempts: a
        # legacy roll, not held against it.
        report = audit(transcript(store, "old"))
        assert report.ok, report.mismatches
        assert (report.rolls, report.recomputed, report.outcomes) == (2, 2, 1)

        async def play_on() -> Any:
            async with table(store, [roll_mara(), narrate_roll()], faces=[11]) as t:
                return await t.game.play("old", "And the next door.")

        result = asyncio.run(play_on())
        assert [(roll.seq, roll.prev_hash) for roll in result.rolls] == [(3, story.chain_head)]
        assert audit(transcript(store, "old")).ok
    finally:
        store.engine.dispose()
