"""Rounds played through each real server's response shapes, per tools mode (native and prompted).

What it does
------------
For every shape in `gm.testing.shapes.SHAPES` (each server's documented answers, and the quirks
gm straightens), one story in the tests' harbour world is played for `--rounds` rounds through
`gm.engine.game.Game` with the real `ModelClient` (the openai client over loopback HTTP) against a
`gm.testing.FakeModel` answering in that shape as game master, judge and memory keeper. Its dice
are seeded, so the bands differ round to round; the fake narrates each honestly once it has read
the band. Every request is checked against OpenAI's request schema by the fake.

With `--tools auto` (the default) the mode is whatever gm decided for the endpoint: `native` where
the server takes tools, `prompted` where it refuses them. The shapes that write calls as text are
also played with `--tools prompted` forced, so each text form is counted in both modes.

Reported (Markdown): per shape, the mode gm used, rounds played and accepted, refusals, model calls,
and any request the fake found invalid or answer it could not use; then the rounds per mode.

    python bench/real_models.py              # 5 rounds per shape
    python bench/real_models.py --rounds 20
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from gm import dice
from gm.engine.game import Game
from gm.models.client import ModelClient, ModelSettings, ToolsMode, forget_tool_modes
from gm.store import Store
from gm.testing import FakeModel
from gm.testing.shapes import SHAPES, Shape, round_script

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))
from worlds import write_world

SCHEMA = Path(__file__).resolve().parent.parent / "tests" / "openai" / "chat-completion-request.schema.json"
TEXT_FORMS = ("hermes-text", "fenced-json", "bare-json", "llama3-python_tag")


async def play(shape: Shape, tools: ToolsMode, rounds: int, folder: Path) -> dict[str, Any]:
    """One story of `rounds` rounds through `shape`; what happened."""
    forget_tool_modes()  # each fake is a new endpoint, though its port may be an earlier one's
    store = Store(f"sqlite:///{folder / f'{shape.name}-{tools}.db'}")
    world = write_world(folder / f"harbor-{shape.name}-{tools}")
    fake = FakeModel(round_script(shape), request_schema=SCHEMA).start()
    accepted, refusals, failed = 0, 0, []
    try:
        client = ModelClient(ModelSettings(fake.base_url, "bench", fake.model, tools=tools))
        game = Game(client, store, source=dice.seeded_source(7))
        story = game.start_story(world)
        for number in range(rounds):
            try:
                result = await game.play(story, f"I pick the lock, try {number + 1}.")
                accepted += 1
                refusals += len(result.refusals)
            except Exception as error:  # a figure to report, not a crash of the benchmark
                failed.append(f"{type(error).__name__}: {error}")
            await game.settle()
        mode = client.tool_mode or "none"
        calls = Counter(call.purpose for call in store.model_calls(story))
    finally:
        fake.close()
    return {
        "shape": shape.name,
        "asked": tools,
        "mode": mode,
        "rounds": rounds,
        "accepted": accepted,
        "refusals": refusals,
        "calls": calls,
        "problems": len(fake.failures) + len(failed),
        "first_problem": (fake.failures + failed)[:1],
    }


async def main(rounds: int) -> None:
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for shape in SHAPES.values():
            rows.append(await play(shape, "auto", rounds, Path(folder)))
            if shape.name in TEXT_FORMS:
                rows.append(await play(shape, "prompted", rounds, Path(folder)))
    print("| shape | --tools | mode used | rounds | accepted | refusals | calls (gm/engine/judge/memory) | problems |")
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        calls = row["calls"]
        mix = f"{calls['game_master']}/{calls['judge']}/{calls['memory']}"
        problems = str(row["problems"]) + (f" ({row['first_problem'][0][:80]})" if row["first_problem"] else "")
        print(
            f"| {row['shape']} | {row['asked']} | {row['mode']} | {row['rounds']} | {row['accepted']} | "
            f"{row['refusals']} | {mix} | {problems} |"
        )
    per_mode: Counter[str] = Counter()
    accepted_per_mode: Counter[str] = Counter()
    for row in rows:
        per_mode[row["mode"]] += row["rounds"]
        accepted_per_mode[row["mode"]] += row["accepted"]
    print()
    for mode in sorted(per_mode):
        shapes = sum(1 for row in rows if row["mode"] == mode)
        print(f"- {mode}: {accepted_per_mode[mode]} of {per_mode[mode]} rounds accepted, over {shapes} shape runs")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds per shape (default 5)")
    asyncio.run(main(parser.parse_args().rounds))
