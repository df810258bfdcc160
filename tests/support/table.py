"""Helpers for the shared table's web tests: a worlds folder with the table world, and one fake for every role
whose game master settles each acting character (and whispers where the last message asks it to)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from gm.testing import calls, honest_judge, is_judge_request, reply, tool_call
from tests.support.worlds import write_table_world

WHISPER_ASK = re.compile(r"whisper to (\w+): (\S+)")
SECRET_ASK = re.compile(r"sense for (\w+)")


def table_worlds(tmp_path: Path, harbor: Path) -> Path:
    """A worlds folder holding the table world as `table`, and the harbour world as `harbour`."""
    folder = tmp_path / "table-worlds"
    folder.mkdir()
    write_table_world(folder / "table")
    shutil.copytree(harbor, folder / "harbour")
    return folder


def table_master(request: dict[str, Any]) -> Any:
    """The judge judges honestly, the keeper summarises, and the game master: rolls the secret check for a
    character the message asks to `sense for X`, whispers WORD backwards where it says `whisper to X: WORD`,
    then narrates an outcome for every character who acted ("Name: ..." at a line's start), naming the secret
    roll for its own."""
    if is_judge_request(request):
        return honest_judge(request)
    if "tools" not in request:
        return reply("Something memorable happened.")
    last_user = next(m for m in reversed(request["messages"]) if m["role"] == "user")["content"]
    tool_results = [m for m in request["messages"] if m["role"] == "tool"]
    sensed = SECRET_ASK.findall(last_user)
    if sensed and not tool_results:
        return calls(
            [tool_call("roll_check", {"check": "sense", "character": who, "reason": "a lie"}) for who in sensed]
        )
    rolled = [json.loads(m["content"]) for m in tool_results]
    rolls = {r["character"]: r for r in rolled if "band" in r}
    acting = re.findall(r"^(\w+)(?: \(initiative -?\d+\))?: ", last_user, flags=re.M) or ["Mara"]
    outcomes = []
    for who in dict.fromkeys([*acting, *rolls]):
        outcome: dict[str, Any] = {"character": who, "result": "succeeded"}
        if who in rolls:
            outcome = {"character": who, "result": rolls[who]["result"], "roll": rolls[who]["roll"]}
        outcomes.append(outcome)
    # The whisper is the asked word backwards: the word itself is in the players' public text.
    steps = [tool_call("whisper", {"character": w[0], "text": w[1][::-1]}) for w in WHISPER_ASK.findall(last_user)]
    tools = {tool["function"]["name"] for tool in request["tools"]}
    steps = steps if "whisper" in tools else []
    steps.append(tool_call("narrate", {"narration": "The harbour answers them.", "outcomes": outcomes}))
    return calls(steps)
