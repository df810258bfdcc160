"""Issue 16's table rules in play: advantage, naturals and opposed checks through the real tools,
referee, store, transcript cards and audit, in the harbour-heist sample world (SQLite and PostgreSQL).

Odile has nerve 2, Quell nerve 3. `attempt` is 1d20 + nerve over a target, with 2d20kh1 for
advantage, and a natural 20 (or 1) steps its band up (or down). `outwit` is opposed: 1d20 + nerve
against the opponent's 1d20 + nerve, and a natural 20 sends it to "Outclassed them".
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

from gm.engine.tools.offered import tool_schemas
from gm.engine.transcript import opened, opened_lines, transcript
from gm.integrity.audit import audit
from gm.store import Store
from gm.testing import call
from gm.world.loading import load_world
from tests.support.paths import SAMPLE_WORLDS
from tests.support.rounds import last_tool_result, narrate_roll, table, tool_results


def copied(name: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(SAMPLE_WORLDS / name, tmp_path / name))


def test_roll_checks_schema_offers_edge_and_opponent_only_where_checks_declare_them() -> None:
    heist = tool_schemas(load_world(SAMPLE_WORLDS / "harbour-heist"))[0]["function"]["parameters"]["properties"]
    assert heist["edge"]["enum"] == ["advantage", "disadvantage"]
    assert "attempt: advantage or disadvantage" in heist["edge"]["description"]
    assert "lockwork" not in heist["edge"]["description"]
    assert "outwit" in heist["opponent"]["description"]
    storm = tool_schemas(load_world(SAMPLE_WORLDS / "storm-wall"))[0]["function"]["parameters"]["properties"]
    assert "edge" not in storm and "opponent" not in storm


def advantage_then_opposed_script() -> list[Any]:
    attempt = {"check": "attempt", "character": "Odile", "target": 14, "reason": "climb the wet wall"}
    outwit = {"check": "outwit", "character": "Odile", "opponent": "Quell", "reason": "palm the key"}

    def quell_named(request: dict[str, Any]) -> Any:
        [rolled] = [r for r in tool_results(request) if r.get("check") == "outwit" and "band" in r]
        outcomes = [
            {"character": "Odile", "result": rolled["result"], "roll": rolled["roll"]},
            {"character": "Quell", "result": "failed", "roll": rolled["roll"]},
        ]
        return call("narrate", {"narration": "Quell's hand closes on air.", "outcomes": outcomes})

    def quell_unnamed(request: dict[str, Any]) -> Any:
        [rolled] = [r for r in tool_results(request) if r.get("check") == "outwit" and "band" in r]
        outcomes = [
            {"character": "Odile", "result": rolled["result"], "roll": rolled["roll"]},
            {"character": "Quell", "result": "failed"},
        ]
        return call("narrate", {"narration": "The key is yours, for now.", "outcomes": outcomes})

    return [
        call("roll_check", {**attempt, "check": "talk", "target": 8, "edge": "advantage"}),  # talk takes no edge
        call("roll_check", {**attempt, "edge": "advantage"}),
        narrate_roll("You reach the sill with breath to spare."),
        call("roll_check", {k: v for k, v in outwit.items() if k != "opponent"}),  # refused: who resists?
        call("roll_check", outwit),
        quell_named,  # refused: the roll settles Odile's outcome only
        quell_unnamed,
    ]


def test_advantage_naturals_and_an_opposed_roll_are_played_told_carded_and_audited(
    store: Store, tmp_path: Path
) -> None:
    # Round 1: advantage rolls 2d20kh1: faces 20 and 3, kept 20: 20 + 2 - 14 = 8, Success, and the
    # natural 20 steps it up to Critical success. Round 2: Odile 10 + 2 against Quell 10 + 3: -1, Even.
    async def play() -> Any:
        async with table(store, advantage_then_opposed_script(), faces=[20, 3, 10, 10]) as t:
            story = t.game.start_story(copied("harbour-heist", tmp_path))
            first = await t.game.play(story, "I climb the wall to the window.")
            second = await t.game.play(story, "I palm the key while Quell talks.")
            return t, story, first, second

    t, story, first, second = asyncio.run(play())
    refused_edge = last_tool_result(t.master.requests[1])
    assert "declares no advantage dice" in refused_edge["error"] and "it takes none" in refused_edge["error"]
    told = last_tool_result(t.master.requests[2])
    assert told["band"] == "Critical success" and told["edge"] == "advantage"
    assert told["natural"] == "natural 20: stepped up from Success"
    assert "8" not in json.dumps(told) and "20" not in json.dumps({k: v for k, v in told.items() if k != "natural"})
    [roll] = first.rolls
    assert (roll.notation, roll.faces, roll.value, roll.band, roll.stepped_from) == (
        "2d20kh1",
        [[20, 3]],
        8,
        "Critical success",
        "Success",
    )
    card = "\n".join(opened_lines(roll))
    assert "with advantage: 2d20kh1 (20, [3]) = 20, +2, target 14 -> 8" in card
    assert "natural 20: stepped up from Success" in card
    # Advantage at target 14 with nerve 2 reads kept - 12; the higher of 2d20 is at most k in k*k of 400.
    # kept 1-2: 4/400; 3-11: 117/400 (29.25% rounds up); 12-15: 104/400; 16-19: 136/400; a kept 20
    # (39/400) reads 8, Success, and its natural steps it up to Critical success.
    assert (
        "odds Critical failure 1.0%, Failure 29.3%, Partial success 26.0%, Success 34.0%, Critical success 9.8%" in card
    )

    assert "opposed: name the opponent" in tool_results(t.master.requests[4])[-1]["error"]
    opposed = tool_results(t.master.requests[5])[-1]
    assert (opposed["band"], opposed["opponent"]) == ("Even", "Quell") and "Odile's outcome only" in opposed["serves"]
    assert any("settles Odile's outcome only" in refusal for refusal in second.refusals)
    [duel] = second.rolls
    assert (duel.notation, duel.faces, duel.total, duel.modifier, duel.opponent_modifier, duel.value) == (
        "1d20-1d20",
        [[10], [10]],
        0,
        2,
        3,
        -1,
    )
    assert opened(duel).startswith(
        "Outwit - Odile vs Quell: Even  [1d20 (10) - 1d20 (10) = 0, +2 against Quell +3 -> -1"
    )
    assert [(o.character, o.result, o.roll) for o in second.outcomes] == [
        ("Odile", "partial", duel.id),
        ("Quell", "failed", None),
    ]

    whole = transcript(store, story)
    report = audit(whole)
    assert report.ok, report.mismatches
    assert report.recomputed == 2

    def tampered(**changes: Any) -> list[str]:
        data = whole.model_dump(mode="json")
        data["integrity"]["rolls"][0].update(changes)
        return [m.message for m in audit(type(whole).model_validate(data)).mismatches]

    assert any("naturals read" in message for message in tampered(natural="natural 20: nothing happened"))
    assert any("rolls 2d20kl1 with disadvantage, but this roll is 2d20kh1" in m for m in tampered(edge="disadvantage"))
    data = whole.model_dump(mode="json")
    data["integrity"]["rolls"][1]["opponent_modifier"] = 0
    found = [m.message for m in audit(type(whole).model_validate(data)).mismatches]
    assert any("opponent's modifier is 0, but Quell's nerve is 3" in message for message in found)
