"""Rounds at a shared table (gm.engine.table), through FunctionModel: a free round names its seat's character, a
together round settles every action (one outcome per acting character, each its own rolls), combat orders the
actions by rolled initiative, and a whisper reaches one seat's view only."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from gm.engine.results import RoundResult
from gm.engine.table import TableAction, TableTurn, Viewer
from gm.engine.transcript import transcript
from gm.store import Store
from gm.testing import call, calls, reply, tool_call
from tests.support.rounds import table, tool_results
from tests.support.worlds import write_table_world


@pytest.fixture
def table_world(tmp_path: Path) -> Path:
    return write_table_world(tmp_path / "table")


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def seated(store: Store, story: str, *actions: tuple[str, str]) -> TableTurn:
    """Seats for Mara and Odile, and each action written to the table's chain as a gathered message."""
    seats = {seat.character: seat for seat in store.seats(story, live=True)}
    for character in ("Mara", "Odile"):
        if character not in seats:
            seats[character] = store.create_seat(story, character, character * 16)
    written = [store.add_message(story, seats[who], who, text, gathered=True) for who, text in actions]
    return TableTurn(
        tuple(TableAction(m.seq, m.seat_id, m.character, m.text) for m in written),
        together=len(actions) > 1,
        combat=store.story(story).settings.get("combat", False),
        seated=frozenset(seats),
    )


def test_a_free_round_is_played_as_its_seat_s_character(store: Store, table_world: Path) -> None:
    async def play() -> tuple[Any, str, Any]:
        async with table(store, [reply("The gate creaks.")]) as t:
            story = t.game.start_story(table_world)
            turn = seated(store, story, ("Odile", "I listen at the gate."))
            return t, story, await t.game.play(story, "", table=turn)

    t, story, result = run(play())
    assert isinstance(result, RoundResult)
    assert result.player_text == "Odile: I listen at the gate."
    assert t.master.requests[0]["messages"][-1]["content"].startswith("Odile: I listen at the gate.")
    [record] = store.rounds(story)
    assert record.actions == [
        {"message": 1, "seat": store.seats(story)[1].id, "character": "Odile", "text": "I listen at the gate."}
    ]
    assert [m.round_number for m in store.table_messages(story)] == [1]  # the round settled the message
    names = [tool["function"]["name"] for tool in t.master.requests[0]["tools"]]
    assert "whisper" in names  # offered at a table with seats


def test_an_unseated_round_offers_no_whisper_and_keeps_no_actions(store: Store, table_world: Path) -> None:
    async def play() -> tuple[Any, str]:
        async with table(store, [reply("Rain.")]) as t:
            story = t.game.start_story(table_world)
            await t.game.play(story, "I wait.")
            return t, story

    t, story = run(play())
    assert "whisper" not in [tool["function"]["name"] for tool in t.master.requests[0]["tools"]]
    [record] = store.rounds(story)
    assert record.actions is None and record.whispers is None and record.player_text == "I wait."


def test_a_together_round_in_combat_orders_by_initiative_and_settles_every_action(
    store: Store, table_world: Path
) -> None:
    def first_narrate(request: dict[str, Any]) -> Any:
        [rolled] = [r for r in tool_results(request) if "band" in r]
        return call(
            "narrate",
            {
                "narration": "Mara works the lock.",
                "outcomes": [{"character": "Mara", "result": rolled["result"], "roll": rolled["roll"]}],
            },
        )

    def stolen_roll(request: dict[str, Any]) -> Any:  # Odile's outcome names Mara's roll: refused
        [rolled] = [r for r in tool_results(request) if "band" in r]
        return call(
            "narrate",
            {
                "narration": "Both move.",
                "outcomes": [
                    {"character": "Mara", "result": rolled["result"]},
                    {"character": "Odile", "result": rolled["result"], "roll": rolled["roll"]},
                ],
            },
        )

    def honest(request: dict[str, Any]) -> Any:
        [rolled] = [r for r in tool_results(request) if "band" in r]
        return calls(
            [
                tool_call("whisper", {"character": "Odile", "text": "You see Jon palm a knife."}),
                tool_call(
                    "narrate",
                    {
                        "narration": "The lock gives; Odile keeps the door.",
                        "outcomes": [
                            {"character": "Mara", "result": rolled["result"], "roll": rolled["roll"]},
                            {"character": "Odile", "result": "succeeded"},
                        ],
                    },
                ),
            ]
        )

    script = [
        call("roll_check", {"check": "attempt", "character": "Mara", "target": 12, "reason": "the lock"}),
        first_narrate,
        stolen_roll,
        honest,
    ]

    async def play() -> tuple[Any, str, Any]:
        async with table(store, script, faces=[2, 15, 11]) as t:  # initiative: Mara 2+3, Odile 15+1; then the lock
            story = t.game.start_story(table_world, settings={"rounds": "together", "combat": True})
            turn = seated(store, story, ("Mara", "I pick the lock."), ("Odile", "I guard the door."))
            return t, story, await t.game.play(story, "", table=turn)

    t, story, result = run(play())
    assert result.player_text == "Odile (initiative 16): I guard the door.\nMara (initiative 5): I pick the lock."
    first_prompt = t.master.requests[0]["messages"][-1]["content"]
    assert "initiative was rolled (Initiative)" in first_prompt and "Odile 16, Mara 5" in first_prompt
    assert any("Odile acted this round and has no outcome" in refusal for refusal in result.refusals)
    assert any("Odile" in refusal and "roll" in refusal for refusal in result.refusals[1:])
    [record] = store.rounds(story)
    assert [a["character"] for a in record.actions or []] == ["Odile", "Mara"]
    assert record.whispers == [{"character": "Odile", "text": "You see Jon palm a knife."}]
    initiative = [roll for roll in record.rolls if roll["reason"] == "initiative"]
    assert [(r["character"], r["total"]) for r in initiative] == [("Mara", 5), ("Odile", 16)]
    assert all(m.round_number == 1 for m in store.table_messages(story))

    seats = {seat.character: seat for seat in store.seats(story)}
    everyone = frozenset(seats)

    def whispers_for(character: str | None) -> Any:
        seat = seats[character] if character else None
        viewer = Viewer(seat.id if seat else None, character, everyone)
        return transcript(store, story, viewer=viewer).rounds[0].whispers

    assert whispers_for("Odile")[0].text == "You see Jon palm a knife."
    assert whispers_for("Mara")[0].text is None and whispers_for("Mara")[0].character == "Odile"
    assert whispers_for(None)[0].text is None  # the owner: Odile has a seat, so her whisper is hers alone


def test_a_secret_roll_is_shown_to_its_own_seat_only(store: Store, table_world: Path) -> None:
    script = [
        call("roll_check", {"check": "sense", "character": "Mara", "reason": "the clerk's story"}),
        lambda request: call(
            "narrate",
            {
                "narration": "Mara weighs his words.",
                "outcomes": [
                    {
                        "character": "Mara",
                        "result": next(r for r in tool_results(request) if "band" in r)["result"],
                        "roll": next(r for r in tool_results(request) if "band" in r)["roll"],
                    }
                ],
            },
        ),
    ]

    async def play() -> str:
        async with table(store, script, faces=[14]) as t:
            story = t.game.start_story(table_world)
            await t.game.play(story, "", table=seated(store, story, ("Mara", "Is he lying?")))
            return story

    story = run(play())
    seats = {seat.character: seat for seat in store.seats(story)}
    everyone = frozenset(seats)
    mara = transcript(store, story, viewer=Viewer(seats["Mara"].id, "Mara", everyone))
    odile = transcript(store, story, viewer=Viewer(seats["Odile"].id, "Odile", everyone))
    assert [roll.band for roll in mara.rounds[0].rolls] == ["Sees through it"]
    assert odile.rounds[0].rolls == [] and odile.integrity is not None
    assert [roll.sealed for roll in odile.integrity.rolls] == [True]
    assert mara.integrity is not None and [roll.sealed for roll in mara.integrity.rolls] == [False]
