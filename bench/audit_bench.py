"""Benchmark: how long `gm audit` takes on a story of 1,000 rounds, from the database and from a file.

What it measures
----------------
One fair story (a player's seed mixed in) in the tests' harbour world, played for 1,000 rounds
through `gm.engine.game.Game` with an in-process stand-in for the model (no HTTP: building the story is
not what is measured). Odd rounds roll the `attempt` check for Mara and narrate it; every tenth
round also rolls plain dice; even rounds end in plain text. Every 100 rounds one attempt fails after
its roll and is played again (its roll comes back), so the chain holds failed attempts' rolls too.
The memory keeper answers with a fixed summary. At the end the seed is revealed, so every fair
roll is derived again.

Then, timed with `time.perf_counter` (median of the repeats):

1. read: `gm.engine.transcript.transcript(store, id)`, everything the audit needs from the database;
2. check: `gm.integrity.audit.audit(transcript)`, the checks themselves (chain, recomputation, seeds, rounds);
3. `gm audit STORY` end to end in this process (`gm.cli.main`, output discarded): read and check;
4. `gm audit --file`: reading the exported JSON, validating it as a transcript, and checking it.

On SQLite (a file in a temporary folder), and on PostgreSQL with `--postgres URL` (a scratch
database is created there and dropped afterwards).

How to run
----------
From the project root, with the virtualenv active::

    python bench/audit_bench.py
    python bench/audit_bench.py --postgres postgresql://postgres@127.0.0.1:5432/test
    python bench/audit_bench.py --rounds 200 --repeats 3      # smoke run

The output is Markdown, ready to paste into a README; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import io
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import psycopg

from gm.cli import main as gm_main
from gm.cli._audit import read_transcript
from gm.engine.game import Game
from gm.engine.round import RoundSettings
from gm.engine.transcript import transcript
from gm.errors import GmError
from gm.integrity.audit import audit
from gm.integrity.seeds import reveal
from gm.models.client import Completion, ToolCall, Usage
from gm.store import Store

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))
from worlds import write_world

ROLL_TEXT = "I try the next lock."
DICE_TEXT = "I try the next lock, and the guard swings at me."
FAIL_TEXT = "I try the lock that jams."


class StandIn:
    """An in-process game master: rolls when asked to, narrates honestly, fails one attempt when told to."""

    def __init__(self) -> None:
        self.calls = 0
        self.failed: set[str] = set()

    async def complete(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None = None, **_: Any
    ) -> Completion:
        self.calls += 1
        if tools is None:
            return _answer("Mara went on.")
        last = messages[-1]
        player = next(m["content"] for m in reversed(messages) if m["role"] == "user")
        if last["role"] == "user":
            if "lock" not in str(player):
                return _answer("The harbour is quiet.")
            calls = [("roll_check", {"check": "attempt", "character": "Mara", "target": 12, "reason": "the lock"})]
            if DICE_TEXT in str(player):
                calls.append(("roll_dice", {"notation": "1d6", "reason": "the guard's blow"}))
            return _answer(None, calls)
        if FAIL_TEXT in str(player) and player not in self.failed:
            self.failed.add(str(player))
            raise _Unreachable("the stand-in fails this attempt once")
        results = [json.loads(m["content"]) for m in messages if m["role"] == "tool"]
        rolled = [r for r in results if "band" in r][-1]
        outcome = {"character": "Mara", "result": rolled["result"], "roll": rolled["roll"]}
        return _answer(None, [("narrate", {"narration": "The lock decides.", "outcomes": [outcome]})])


class _Unreachable(GmError):
    """Stands for a model that could not be reached."""


def _answer(text: str | None, calls: Sequence[tuple[str, dict[str, Any]]] = ()) -> Completion:
    tool_calls = [ToolCall(f"call_{uuid.uuid4().hex[:8]}", name, json.dumps(arguments)) for name, arguments in calls]
    raw: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls:
        raw["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in tool_calls
        ]
    return Completion(text, tool_calls, "tool_calls" if calls else "stop", Usage(10, 10, True), 0, 1, raw)


async def build_story(store: Store, world: Path, rounds: int) -> str:
    model = StandIn()
    game = Game(model, store, settings=RoundSettings())
    story = game.start_story(world, fair=True, player_seed="a player's seed")
    for number in range(1, rounds + 1):
        text = "I wait." if number % 2 == 0 else (DICE_TEXT if number % 10 == 1 else ROLL_TEXT)
        if number % 100 == 1:
            text = FAIL_TEXT + f" ({number})"
            with contextlib.suppress(GmError):
                await game.play(story, text)
        await game.play(story, text)
        await game.settle()
        if number % 100 == 0:
            print(f"  {number} rounds", file=sys.stderr)
    return story


def timed(work: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(url: str, label: str, rounds: int, repeats: int, folder: Path) -> None:
    store = Store(url)
    print(f"{label}: playing {rounds} rounds...", file=sys.stderr)
    story = asyncio.run(build_story(store, write_world(folder / "harbor"), rounds))
    reveal(store, story)
    data = transcript(store, story)
    report = audit(data)
    assert report.ok, report.mismatches[:3]
    exported = folder / f"{label}.json"
    exported.write_text(json.dumps(data.model_dump(mode="json")))

    def cli(*arguments: str) -> None:
        with contextlib.redirect_stdout(io.StringIO()):
            code = gm_main(list(arguments))
        assert code == 0

    os.environ["GM_DATABASE_URL"] = url
    read = timed(lambda: transcript(store, story), repeats)
    check = timed(lambda: audit(data), repeats)
    whole = timed(lambda: cli("audit", story), repeats)
    from_file = timed(lambda: audit(read_transcript(exported)), repeats)
    size = exported.stat().st_size
    print(
        f"| {label} | {len(data.rounds):,} | {report.rolls:,} | {report.derived:,} | {read * 1000:,.0f} ms | "
        f"{check * 1000:,.0f} ms | {whole * 1000:,.0f} ms | {from_file * 1000:,.0f} ms ({size / 1e6:.1f} MB) |"
    )
    store.engine.dispose()


@contextlib.contextmanager
def scratch_postgres(url: str) -> Iterator[str]:
    name = f"gm_audit_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{url.rsplit('/', 1)[0]}/{name}"
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--postgres", help="also measure on this PostgreSQL server (a scratch database is made)")
    arguments = parser.parse_args()
    print(
        f"# gm audit on a story of {arguments.rounds:,} rounds ({datetime.date.today()}, Python "
        f"{platform.python_version()})\n"
    )
    print(f"Median of {arguments.repeats} runs each.\n")
    print("| Database | Rounds | Rolls | Fair rolls derived | Read | Check | `gm audit STORY` | `gm audit --file` |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        measure(f"sqlite:///{folder / 'gm.db'}", "SQLite", arguments.rounds, arguments.repeats, folder)
        if arguments.postgres:
            with scratch_postgres(arguments.postgres) as url:
                measure(url, "PostgreSQL", arguments.rounds, arguments.repeats, folder)


if __name__ == "__main__":
    main()
