"""Benchmark of the memory keeper's batches (gm.engine.memory): what summarising several rounds in one call saves.

What it measures
----------------
Each variant plays one story of worlds/harbour-heist on its own SQLite file (or on `--postgres URL`),
through `gm.engine.game.Game` with the real `ModelClient` (the openai client over loopback HTTP), against
one zero-latency `gm.testing.FakeModel` running in its own process, so a variant's process CPU time
(`time.process_time`, all threads) is gm's own work and the client's, never the fake's. Rounds are
plain (the game master answers in text: no roll, no judge), so the memory keeper stands out.

Each variant runs in its own child process, and the variants take turns, `--chunk` rounds at a
time, so all are measured in one run on the same (noisy, shared) machine:

- `batch N` (this tree): `Game(memory_batch=N)`; `--batches 1,4` by default. Batch 1 is one memory
  call per round, as before batching.
- `base` (with `--baseline DIR`, e.g. /work/base): the same player code run by DIR's own virtualenv,
  so the code before batching.

For each round the worker times `await game.play(...)` (the round), then
`await game.settle(flush=False)` (the memory keeper's work that round started: with batch N, a call
every N rounds and a database read otherwise; the baseline's `settle()` takes no argument and
remembers every round). The keeper's cost is lumpy (one round in N pays for the call), so it is
reported per round as a mean over all rounds, and as the median over chunks of the chunk's mean.
Model calls and tokens come from the store's `model_calls` table (purpose "memory", folds included);
the game master's prompt tokens (first call of each round) show the prompt did not grow.

How to run
----------
From the project root, with the virtualenv active::

    python bench/memory_batch_bench.py                         # batch 1 vs 4, 240 rounds each
    python bench/memory_batch_bench.py --baseline /work/base --batches 1,2,3,4
    python bench/memory_batch_bench.py --quick                 # 48 rounds each
    python bench/memory_batch_bench.py --postgres postgresql://postgres@127.0.0.1:5432/bench

Output is Markdown on stdout; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

HERE = Path(__file__).resolve().parent
TREE = HERE.parent
WORDS = ["harbour", "lantern", "quay", "rope", "salt", "fog", "ledger", "guard", "crate", "tide", "gull"]
WORDS += ["whisper", "lock", "shadow", "coin", "barge", "smuggler", "bell", "net", "oar", "warehouse", "clerk"]


def compose(rng: random.Random, words: int, opening: str = "") -> str:
    """Varied prose of about `words` words (so no two rounds read alike)."""
    text = " ".join(rng.choice(WORDS) for _ in range(words))
    return f"{opening} {text[0].upper()}{text[1:]}.".strip()


# The fake model (its own process)


def serve_fake() -> None:
    """Serve the fake model on 127.0.0.1 until stdin closes; print its base URL first."""
    from gm.testing import FakeModel, reply

    headed = re.compile(r"^=== Round (\d+) ===$", re.M)

    def answer(request: dict[str, Any]) -> Any:
        messages = request["messages"]
        system, last = messages[0]["content"], messages[-1]["content"]
        rng = random.Random(len(last) * 7919 + len(messages))
        if "tools" in request:
            return reply(compose(rng, 120, "The fog thickens over the quay."))
        if "running summary" in system:
            return reply(compose(rng, 200, "Mara has been working the harbour by night."))
        numbers = headed.findall(last)
        if not numbers:  # one round, asked as before batching
            return reply(compose(rng, 60, "Mara pressed on at the harbour."))
        return reply("\n".join(f"Round {number}: {compose(rng, 60, 'Mara pressed on.')}" for number in numbers))

    fake = FakeModel(answer).start()
    print(fake.base_url, flush=True)
    sys.stdin.read()
    fake.close()


# A variant's worker (its own process, run by its tree's python)


async def work(url: str, database: str, batch: int | None, commands: IO[str], answers: IO[str]) -> None:
    """Play rounds as the parent asks ("K": play K rounds; "end": report), answering in JSON lines."""
    from gm.engine.game import Game
    from gm.models.client import ModelClient, ModelSettings
    from gm.store import Store

    store = Store(database)
    options: dict[str, Any] = {} if batch is None else {"memory_batch": batch}
    game = Game(ModelClient(ModelSettings(url, "bench-key", "fake-model")), store, **options)
    can_wait_only = "flush" in inspect.signature(game.settle).parameters
    story = game.start_story(TREE / "worlds" / "harbour-heist")
    played = 0
    for line in commands:
        if line.strip() == "end":
            break
        timings = []
        for _ in range(int(line)):
            played += 1
            cpu, wall = time.process_time(), time.perf_counter()
            await game.play(story, f"I look along the quay for a way in, round {played}.")
            cpu_played, wall_played = time.process_time(), time.perf_counter()
            await (game.settle(flush=False) if can_wait_only else game.settle())
            timings.append((cpu_played - cpu, wall_played - wall, time.process_time() - cpu_played,
                            time.perf_counter() - wall_played))  # fmt: skip
        answers.write(json.dumps(timings) + "\n")
        answers.flush()
    await game.settle()
    calls = store.model_calls(story)
    memory = [call for call in calls if call.purpose == "memory"]
    first_calls: dict[str | None, int] = {}
    for call in calls:
        if call.purpose == "game_master" and call.attempt_id not in first_calls:
            first_calls[call.attempt_id] = call.prompt_tokens
    report = {
        "rounds": played,
        "memory_calls": len(memory),
        "memory_tokens": sum(call.prompt_tokens + call.completion_tokens for call in memory),
        "remembered": len(store.memories(story)),
        "gm_prompt_tokens": list(first_calls.values()),
    }
    answers.write(json.dumps(report) + "\n")
    answers.flush()


# The parent


@dataclass
class Variant:
    label: str
    python: str
    tree: Path
    batch: int | None
    process: subprocess.Popen[str] | None = None
    rounds: list[tuple[float, float, float, float]] = field(default_factory=list)
    chunks: list[float] = field(default_factory=list)  # the keeper's mean CPU per round, each chunk
    report: dict[str, Any] = field(default_factory=dict)


def start(variant: Variant, url: str, database: str) -> None:
    command = [variant.python, str(HERE / "memory_batch_bench.py"), "--worker", "--url", url, "--database", database]
    if variant.batch is not None:
        command += ["--batch", str(variant.batch)]
    environment = {**os.environ, "PYTHONPATH": str(variant.tree)}
    environment.pop("GM_MEMORY_BATCH", None)
    variant.process = subprocess.Popen(
        command, cwd=variant.tree, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=environment
    )


def ask(variant: Variant, line: str) -> Any:
    assert variant.process is not None and variant.process.stdin is not None and variant.process.stdout is not None
    variant.process.stdin.write(line + "\n")
    variant.process.stdin.flush()
    answer = variant.process.stdout.readline()
    if not answer:
        raise SystemExit(f"the worker for {variant.label} ended early (exit {variant.process.wait()})")
    return json.loads(answer)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


def table(variants: Sequence[Variant], reference: Variant) -> str:
    lines = [
        "| variant | memory calls / round | memory tokens / round | keeper CPU ms / round (mean) "
        "| keeper CPU ms / round (median of chunks) | vs batch 1 | keeper wall ms / round | round CPU ms (median) "
        "| GM prompt tokens (median, max) | rounds remembered |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    reference_cpu = statistics.median(reference.chunks)
    for variant in variants:
        rounds = len(variant.rounds)
        keeper_cpu = statistics.fmean(r[2] for r in variant.rounds)
        keeper_wall = statistics.fmean(r[3] for r in variant.rounds)
        chunked = statistics.median(variant.chunks)
        prompts = variant.report["gm_prompt_tokens"]
        lines.append(
            f"| {variant.label} | {variant.report['memory_calls'] / rounds:.3f} "
            f"| {variant.report['memory_tokens'] / rounds:.0f} | {ms(keeper_cpu)} | {ms(chunked)} "
            f"| {chunked / reference_cpu:.2f}x | {ms(keeper_wall)} "
            f"| {ms(statistics.median(r[0] for r in variant.rounds))} "
            f"| {statistics.median(prompts):.0f}, {max(prompts)} "
            f"| {variant.report['remembered']} of {variant.report['rounds']} |"
        )
    return "\n".join(lines)


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=240, help="rounds each variant plays (default 240)")
    parser.add_argument("--chunk", type=int, default=12, help="rounds a variant plays before the next's turn")
    parser.add_argument("--batches", default="1,4", help="batch sizes of this tree to compare (default 1,4)")
    parser.add_argument("--baseline", type=Path, help="a tree from before batching, run with its own .venv")
    parser.add_argument("--postgres", help="a PostgreSQL URL to play on instead of SQLite files")
    parser.add_argument("--quick", action="store_true", help="48 rounds each")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--fake", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--database", help=argparse.SUPPRESS)
    parser.add_argument("--batch", type=int, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    arguments = parse_arguments(argv)
    if arguments.fake:
        serve_fake()
        return
    if arguments.worker:
        asyncio.run(work(arguments.url, arguments.database, arguments.batch, sys.stdin, sys.stdout))
        return
    rounds = 48 if arguments.quick else arguments.rounds
    variants = [Variant(f"batch {n}", sys.executable, TREE, int(n)) for n in arguments.batches.split(",")]
    if arguments.baseline is not None:
        base = arguments.baseline.resolve()
        variants.insert(0, Variant(f"base ({base.name})", str(base / ".venv" / "bin" / "python"), base, None))
    reference = next((v for v in variants if v.batch == 1), variants[0])
    fake = subprocess.Popen(
        [sys.executable, str(HERE / "memory_batch_bench.py"), "--fake"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert fake.stdout is not None and fake.stdin is not None
    url = fake.stdout.readline().strip()
    with tempfile.TemporaryDirectory(prefix="gm-memory-bench-") as folder:
        try:
            for at, variant in enumerate(variants):
                start(variant, url, arguments.postgres or f"sqlite:///{folder}/variant{at}.db")
            for done in range(0, rounds, arguments.chunk):
                chunk = min(arguments.chunk, rounds - done)
                for variant in variants:
                    timings = [tuple(t) for t in ask(variant, str(chunk))]
                    variant.rounds += timings  # type: ignore[arg-type]
                    variant.chunks.append(statistics.fmean(t[2] for t in timings))
                print(f"{done + chunk} of {rounds} rounds", file=sys.stderr)
            for variant in variants:
                variant.report = ask(variant, "end")
        finally:
            for variant in variants:
                if variant.process is not None:
                    variant.process.kill()
            fake.stdin.close()
            fake.wait()
    where = "PostgreSQL" if arguments.postgres else "SQLite files"
    print(f"## Memory keeper batches: {rounds} plain rounds per variant, {where}, chunks of {arguments.chunk}\n")
    print(table(variants, reference))


if __name__ == "__main__":
    main()
