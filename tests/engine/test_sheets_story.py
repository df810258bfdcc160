"""A story of 50 rounds whose game master changes the characters' sheets, sometimes wrongly, played through the
real openai client over HTTP against gm.testing's fake server, on SQLite and PostgreSQL.

Every sheet must end equal to the world's start plus the accepted changes; every bad change is refused; a
narration that tells a change the round did not make is refused and never stored; a failed attempt's
changes vanish; a round played again replaces its changes; `gm audit` passes, and a tampered change or value
fails it. Run with `-s` to see the figures (changes tried, accepted, refused by kind, the sheet judge's cost).
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from gm.engine.tools.offered import tool_schemas
from gm.engine.transcript import transcript
from gm.errors import RoundFailed
from gm.integrity.audit import audit
from gm.store import Store
from gm.testing import call, honest_judge, is_sheet_judge_request, length, reply, sheet_judge_answer
from gm.world.loading import load_world
from tests.support.command_line import gm
from tests.support.rounds import table, tool_results
from tests.support.worlds import SHEET_DICE as DICE
from tests.support.worlds import SHEET_WORLD as WORLD
from tests.support.worlds import write_world

ROUNDS = 50
INVENTED_ROUND, FAILED_ROUND, REGENERATED_ROUND = 20, 30, 40
INVENTED = "She drops the picks as she runs."


def change(character: str, variable: str, action: str, reason: str = "the story", **more: Any) -> dict[str, Any]:
    return {"character": character, "variable": variable, "action": action, "reason": reason, **more}


def plan(number: int, attempt: int) -> tuple[str, list[dict[str, Any]] | None, str | None]:
    """What the game master tries in round `number` (its `attempt`-th try): (kind, changes, bad kind or None).

    kind "change" calls change_sheet, "strike" rolls the check, "plain" changes nothing."""
    if number == FAILED_ROUND and attempt == 1:
        return (
            "change",
            [change("Mara", "kit", "add", item="lantern", reason="found, then lost to a cut-off answer")],
            None,
        )
    if number == REGENERATED_ROUND:
        return "change", [change("Mara", "kit", "add", amount=attempt, item="coins", reason="a tip")], None
    if number == INVENTED_ROUND:
        return "change", [change("Mara", "hp", "adjust", amount=-1, reason="a fall")], None
    step = number % 12
    if step == 0:
        return "plain", None, None
    if step == 1:
        return "change", [change("Mara", "hp", "adjust", amount=-1, reason="a splinter")], None
    if step == 2:
        return "change", [change("Mara", "hp", "set", amount=99, reason="greed")], "out_of_bounds"
    if step == 3:
        return "change", [change("Mara", "kit", "remove", item="rope", reason="climbing")], "not_held"
    if step == 4:
        return "change", [change("Mara", "kit", "adjust", amount=1, reason="a mix-up")], "wrong_type"
    if step == 5:
        return "change", [change("Zed", "hp", "adjust", amount=-1, reason="a stranger")], "unknown_character"
    if step == 6:
        return "change", [change("Mara", "kit", "add", amount=2, item="coins", reason="a gift")], None
    if step == 7:
        return "change", [change("Tomas", "hp", "adjust", roll="-1d4", reason="a thrown inkpot")], None
    if step == 8:
        return "strike", None, None
    if step == 9:
        wounded = change("Mara", "state", "on" if number % 24 == 9 else "off", condition="wounded")
        return "change", [wounded, change("Mara", "state", "on", condition="cursed")], "unknown_condition"
    if step == 10:
        return (
            "change",
            [change("Mara", "hp", "set", amount=10, reason="rest"), change("Tomas", "hp", "set", amount=8)],
            None,
        )
    return "change", [change("Mara", "nerve", "adjust", amount=1, reason="courage")], "fixed"


class GameMaster:
    """The fake game master: follows `plan`, narrates each change it made, and keeps score."""

    def __init__(self) -> None:
        self.attempts: Counter[int] = Counter()
        self.tried = 0
        self.refused: Counter[str] = Counter()
        self.sentences: dict[str, str] = {}
        self.invented_told = False

    def __call__(self, request: dict[str, Any]) -> Any:
        messages = request["messages"]
        last = messages[-1]
        number = self._round(messages)
        if last["role"] == "user" and "Round " in str(last["content"]):
            self.attempts[number] += 1
            kind, changes, _ = plan(number, self.attempts[number])
            if kind == "plain":
                return reply(f"Round {number}: the night goes on quietly.")
            if kind == "strike":
                return call(
                    "roll_check", {"check": "strike", "character": "Mara", "against": "Tomas", "reason": "a blow"}
                )
            self.tried += len(changes or [])
            return call("change_sheet", {"changes": changes})
        result = json.loads(last["content"]) if last["role"] == "tool" else {}
        kind, changes, bad = plan(number, self.attempts[number])
        if "accepted" in result or ("error" in result and str(result["error"]).startswith("narrate was refused")):
            self.invented_told = True
            return call("narrate", {"narration": f"Round {number}: she catches her breath.", "outcomes": []})
        if "error" in result:
            assert bad is not None, result
            self.refused[bad] += 1
            self.sentences.setdefault(bad, result["error"])
            return call("narrate", {"narration": f"Round {number}: nothing changes.", "outcomes": []})
        if number == FAILED_ROUND and self.attempts[number] == 1:
            return length("She finds a lantern and")
        if kind == "strike":
            rolled = [each for each in tool_results(request) if "band" in each][-1]
            outcome = {"character": "Mara", "result": rolled["result"], "roll": rolled["roll"]}
            told = f"Round {number}: the blow lands or not; " + "; ".join(rolled.get("changes", []))
            return call("narrate", {"narration": told, "outcomes": [outcome]})
        told = f"Round {number}: " + "; ".join(result["changed"]) + "."
        if number == INVENTED_ROUND:
            told += " " + INVENTED
        return call("narrate", {"narration": told, "outcomes": []})

    @staticmethod
    def _round(messages: list[dict[str, Any]]) -> int:
        player = [m for m in messages if m["role"] == "user" and str(m["content"]).startswith("Round ")][-1]
        return int(str(player["content"]).split()[1].rstrip("."))


def judge(request: dict[str, Any]) -> Any:
    """Honest, but it reads the invented drop of the picks as a change nobody made."""
    if is_sheet_judge_request(request) and INVENTED in json.dumps(request["messages"]):
        return sheet_judge_answer(invented=(("Mara", "drops the lock picks", INVENTED),))(request)
    return honest_judge(request)


def replay(start: dict[str, Any], changes: list[dict[str, Any]]) -> dict[str, Any]:
    """The sheets from the start and the changes, by this test's own arithmetic (not gm.world.sheet's)."""
    sheets = copy.deepcopy(start)
    for made in changes:
        entry = sheets[made["character"]][made["variable"]]
        if made["action"] in ("set", "adjust"):
            value = made["amount"] if made["action"] == "set" else entry["value"] + made["amount"]
            entry["value"] = max(entry.get("min", value), min(entry.get("max", value), value))
        elif made["action"] in ("on", "off"):
            entry["conditions"][made["condition"]] = made["action"] == "on"
        else:
            items = {item["name"]: item["count"] for item in entry["items"]}
            items[made["item"]] = items.get(made["item"], 0) + (
                made["amount"] if made["action"] == "add" else -made["amount"]
            )
            entry["items"] = [{"name": name, "count": count} for name, count in items.items() if count > 0]
    return sheets


@pytest.mark.slow
def test_a_50_round_story_keeps_every_sheet_honest(store: Store, database_url: str, tmp_path: Path) -> None:
    world_path = write_world(tmp_path / "customs", WORLD, DICE)
    master = GameMaster()

    async def play() -> Any:
        async with table(store, master, judge=judge, transport="http") as t:
            story = t.game.start_story(world_path)
            results = []
            for number in range(1, ROUNDS + 1):
                if number == FAILED_ROUND:
                    with pytest.raises(RoundFailed):
                        await t.game.play(story, f"Round {number}. I search the desk.")
                results.append(await t.game.play(story, f"Round {number}. I keep working."))
                if number == REGENERATED_ROUND:
                    results[-1] = await t.game.regenerate(story)
            return t, story, results

    t, story, results = asyncio.run(play())
    sheets_now = store.story(story).sheet
    changes = [made.model_dump() for result in results for made in result.changes]
    start = load_world(world_path).start_sheets
    # Every sheet is the world's start plus the accepted changes, by an arithmetic of the test's own.
    assert sheets_now == replay(start, changes)
    assert t.game.sheets(story).sheet == sheets_now
    # A rolled amount is a roll in the chain, of its round, recorded as rolled or as a band's effect.
    rolls = {roll.id: roll for roll in store.story_rolls(story)}
    for made in changes:
        if made["source"] != "chosen":
            assert made["roll"] in rolls and abs(made["amount"]) == rolls[made["roll"]].total
            assert rolls[made["roll"]].round_number == made["round"]
    # Every bad change was refused, none of it made; refusals by kind as planned.
    planned_bad = Counter(bad for n in range(1, ROUNDS + 1) if (bad := plan(n, 1)[2]) is not None)
    assert master.refused == planned_bad
    assert not any(
        made["item"] == "rope" or made["character"] == "Zed" or made["condition"] == "cursed" for made in changes
    )
    # The invented change was refused and never stored; the round's real change was.
    invented = results[INVENTED_ROUND - 1]
    assert INVENTED not in invented.narration and any("made no such change" in r for r in invented.refusals)
    assert all(INVENTED not in record.narration for record in store.rounds(story))
    # The failed attempt's lantern is nowhere; the round played again keeps only its second version's change.
    assert not any(made["item"] == "lantern" for made in changes)
    regenerated = store.sheet_changes(story, REGENERATED_ROUND)
    assert [(c.item, c.amount) for c in regenerated] == [("coins", 2)]
    # The audit passes; a tampered change, or a tampered value, fails it.
    assert audit(transcript(store, story)).ok, audit(transcript(store, story)).mismatches
    database = {"GM_DATABASE_URL": database_url}
    passed = gm("audit", story, env=database)
    assert passed.returncode == 0 and "checks out" in passed.stdout, passed
    with store.engine.begin() as connection:
        connection.execute(
            text("UPDATE sheet_changes SET amount = amount - 1 WHERE story_id = :s AND seq = 2"), {"s": story}
        )
    assert not audit(transcript(store, story)).ok
    failed = gm("audit", story, env=database)
    assert failed.returncode != 0 and "sheet change 2" in failed.stdout + failed.stderr, failed
    with store.engine.begin() as connection:
        connection.execute(
            text("UPDATE sheet_changes SET amount = amount + 1 WHERE story_id = :s AND seq = 2"), {"s": story}
        )
    assert audit(transcript(store, story)).ok
    tampered = copy.deepcopy(sheets_now)
    tampered["Mara"]["hp"]["value"] = (tampered["Mara"]["hp"]["value"] + 1) % 10
    with store.engine.begin() as connection:
        connection.execute(text("UPDATE stories SET sheet = :v WHERE id = :s"), {"v": json.dumps(tampered), "s": story})
    report = audit(transcript(store, story))
    assert not report.ok and any("sheets now" in m.message for m in report.mismatches)
    _print_figures(master, changes, store, story, results)


def _print_figures(
    master: GameMaster, changes: list[dict[str, Any]], store: Store, story: str, results: list[Any]
) -> None:
    with store.engine.connect() as connection:
        calls = connection.execute(
            text(
                "SELECT purpose, COUNT(*), SUM(prompt_tokens), SUM(completion_tokens) FROM model_calls"
                " WHERE story_id = :s GROUP BY purpose ORDER BY purpose"
            ),
            {"s": story},
        ).all()
    changing = sum(1 for result in results if result.changes)
    by_source = Counter(made["source"] for made in changes)
    print("\nsheet story figures:")
    print(f"  rounds {ROUNDS}, rounds that changed a sheet {changing}")
    print(f"  changes tried by change_sheet {master.tried}, accepted changes {len(changes)} {dict(by_source)}")
    print(f"  refused calls by kind {dict(master.refused)}")
    for purpose, count, prompt, completion in calls:
        print(f"  model calls {purpose}: {count} calls, {prompt} prompt + {completion} completion tokens")
        if purpose == "sheet_judge":
            spent = (prompt + completion) / changing
            print(f"  sheet judge per changing round: {count / changing:.2f} calls, {spent:.0f} tokens")
    for kind, sentence in sorted(master.sentences.items()):
        print(f"  refusal [{kind}]: {sentence}")


def test_change_sheet_is_offered_only_where_a_sheet_can_change(tmp_path: Path) -> None:
    sheeted = load_world(write_world(tmp_path / "sheeted", WORLD, DICE))
    fixed = copy.deepcopy(WORLD)
    for character in fixed["characters"]:
        character["variables"] = {"nerve": 2}
    plain = load_world(write_world(tmp_path / "plain", fixed, None))
    offered = {tool["function"]["name"]: tool for tool in tool_schemas(sheeted)}
    assert "change_sheet" in offered and "change_sheet" not in {t["function"]["name"] for t in tool_schemas(plain)}
    schema = offered["change_sheet"]["function"]["parameters"]
    assert schema["properties"]["changes"]["items"]["properties"]["character"]["enum"] == ["Mara", "Tomas"]
    print("\nchange_sheet schema:\n" + json.dumps(offered["change_sheet"], indent=1))
