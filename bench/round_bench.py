"""Benchmark of the round engine: what gm itself costs per round, and whether that cost grows with the story.

What it measures
----------------
One story in the tests' harbour world (tests/support/worlds.py: world.json + dice.json written to a
temporary folder), on a SQLite file in a temporary folder, played for 1,000 rounds through
`gm.engine.game.Game` with the real `ModelClient` (the openai client over loopback HTTP) against a
zero-latency `gm.testing.FakeModel` that serves both the game master and the memory keeper:

- Game-master requests (they carry `tools`): for a player text asking for a roll (odd rounds), the
  fake calls `roll_check` (attempt, Mara, target 12), then, given the tool result, calls `narrate`
  with an honest outcome taken from it; otherwise (even rounds) it answers in plain text.
  Narrations are about 120 words, different every round.
- Memory-keeper requests (no `tools`): a summary of about 60 words; a fold request (system prompt
  prompts/memory_fold.txt) gets a running summary of about 200 words.

After each `await game.play(...)` the benchmark awaits `game.settle()`, so the memory keeper's work
happens (and is counted) but lies outside the round's timing.

Reported:

1. Framework time per round: the wall time of `game.play` minus the time the fake spent inside
   `FakeModel.handle` for that round's requests (measured server-side with `time.perf_counter`).
   Included: gm's own work (prompt building, tool dispatch, referee, SQLite writes and reads), the
   openai client and tenacity, and the loopback HTTP round-trips on both sides (httpx, the kernel,
   and `http.server`'s request parsing and writing in the fake's thread). Excluded: only the fake's
   `handle` (parsing the request JSON, the script, building and encoding the answer). Medians and
   p95 (nearest rank) for the first and last 50 rounds, split by rounds with a roll and without.
2. Model calls per round, from the store's `model_calls` table: game-master calls (by attempt) and
   memory calls (each attributed to the round just played, as `settle` runs after every round).
3. The game master's prompt size on the first call of a round: the stored `ModelCall.prompt_tokens`
   (the fake's estimate: the text of the request's messages / 4; tool schemas are not counted), and
   the request body in bytes as sent over HTTP (tool schemas and JSON included).

The machine is shared and noisy: the figures are medians and p95 from one run, not best-of-N.

How to run
----------
From the project root, with the virtualenv active::

    python bench/round_bench.py             # 1,000 rounds, a few minutes
    python bench/round_bench.py --quick     # smoke run: 120 rounds, windows of 30 rounds
    python bench/round_bench.py --rounds 300

The output is Markdown, ready to paste into a README; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import math
import platform
import random
import re
import statistics
import sys
import tempfile
import threading
import time
import zlib
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlmodel import select

from gm import dice
from gm.engine.game import Game
from gm.engine.prompt import instructions
from gm.models.client import ModelClient, ModelSettings
from gm.store import Attempt, ModelCall, Store
from gm.testing import Answer, FakeModel, Request, Response, call, honest_judge, is_judge_request, reply

# The harbour world of the tests (tests/support/worlds.py), so that the bench and the tests play one world.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))
from worlds import write_world

JUDGE_SETTINGS = ("on", "off")  # the two stories played side by side
FULL_ROUNDS = 1000
QUICK_ROUNDS = 120
FULL_WINDOW = 50
PROMPT_ROUNDS = (1, 10, 25, 50, 100, 250, 500, 750, 1000)
RATIO_ROUNDS = (25, 500)
RATIO_TARGET = 1.2
ROLL_MARKER = "let the dice decide"
ROUND_TEXT = re.compile(r"^Round (\d+):")

NARRATION_WORDS = 120
SUMMARY_WORDS = 60
KEEPER_HEADING = re.compile(r"^=== Round (\d+) ===$", re.MULTILINE)  # gm.engine.prompt.keeper_rounds_messages
FOLD_WORDS = 200

# Words and sentences the fake composes its texts from; seeded per round, so every text differs.
PLACES = (
    "the harbour office",
    "the customs shed",
    "the fish market",
    "the lighthouse stair",
    "the ropewalk",
    "the tide gate",
    "the chandler's loft",
    "the net sheds",
    "the salt warehouse",
    "the pilot's house",
    "the breakwater",
    "the bonded store",
)
THINGS = (
    "a brass key",
    "a torn ledger page",
    "a guttering lantern",
    "a coil of tarred rope",
    "a stamped permit",
    "a sealed letter",
    "a rusted gaff hook",
    "a purse of clipped coins",
    "a harbour chart",
    "a wax seal",
)
MOODS = ("wary", "tired", "amused", "nervous", "sullen", "curious", "impatient", "watchful")
SENTENCES = (
    "Rain needles across {place}, and the gutters run black with tar and old salt.",
    "Jon hangs back near {place}, pretending to mend {thing} while his eyes follow the guards.",
    "Somewhere above you the Warden's boots cross the boards, pause, and move on.",
    "The smell of brine and lamp oil clings to everything, even to the inside of your coat.",
    "A gull screams from the mast of a moored cutter, and a dog answers from {place}.",
    "You feel {thing} pressing against your ribs, a reminder of why you came.",
    "The clerk at {place} looks {mood}, counting something under his breath.",
    "Fog rolls off the water in slow grey sheets, swallowing the far end of the quay.",
    "Two fishwives argue about the price of herring, loud enough to cover a footstep or two.",
    "Your brother's name is written somewhere in those ledgers, and the thought steadies your hands.",
    "A bell rings the half hour from the chapel, thin and cracked in the wet air.",
    "Jon catches your eye and gives the smallest shrug, {mood} as ever.",
    "Lantern light spills from {place}, yellow on the puddles, then a shutter swings closed.",
    "The tide is turning; you can hear it sucking at the pilings below the planks.",
    "Someone has chalked a sign on the door of {place}: a fish with a crooked tail.",
    "The Warden keeps {thing} on a chain, people say, and never lets it out of his sight.",
    "A cart rattles past loaded with barrels, and the driver spits without looking at you.",
    "Your fingers are cold, but they remember the old tricks your father taught you.",
    "Beyond {place} the lighthouse stands dark, as it has since the fleet went missing.",
    "A sailor sings a filthy song about the harbour master, badly and with great feeling.",
)
ENDINGS = (
    "What do you do next?",
    "The way ahead lies open, for the moment. Where do you go?",
    "Footsteps are coming. Do you stay, or slip away?",
    "Jon is waiting for your signal. What is it?",
    "The night is not getting any younger. What now?",
)
TELLINGS = {
    ("succeeded", True): "It goes better than you dared hope: everything gives at once, and no one hears a thing.",
    ("succeeded", False): "It works. The mechanism yields to your patience, and the way is clear.",
    ("partial", False): "It works, but not cleanly: something snaps, loud in the quiet, and a lamp is lit nearby.",
    ("failed", False): "It does not work. The pin jams, your pick bends, and you have lost precious time.",
    ("failed", True): "It goes badly wrong: the pick breaks off inside, and a shout goes up from the quay.",
}
RISKY = (
    "pick the lock of {place}",
    "climb the wet drainpipe at {place}",
    "lift {thing} from the clerk's belt",
    "slip past the guard at {place}",
    "force the shutter of {place}",
    "bluff my way past the watchman at {place}",
)
CALM = (
    "look around {place}",
    "ask Jon what he has heard about {place}",
    "wait in the shadow of {place} and listen",
    "buy a hot pie and watch {place}",
    "study {thing} by the lantern light",
    "walk slowly along the quay toward {place}",
)


def compose(rng: random.Random, words: int, opening: str = "", closing: str = "") -> str:
    """Prose of about `words` words from the sentence pool, with an optional first and last sentence."""
    sentences = [opening] if opening else []
    count = len(opening.split()) + len(closing.split())
    while count < words:
        sentence = rng.choice(SENTENCES).format(
            place=rng.choice(PLACES), thing=rng.choice(THINGS), mood=rng.choice(MOODS)
        )
        sentences.append(sentence)
        count += len(sentence.split())
    if closing:
        sentences.append(closing)
    return " ".join(sentences)


def player_text(number: int) -> str:
    """Odd rounds ask for a roll, even rounds do not."""
    rng = random.Random(number)
    place, thing = rng.choice(PLACES), rng.choice(THINGS)
    if number % 2:
        action = rng.choice(RISKY).format(place=place, thing=thing)
        return f"Round {number}: I try to {action}. It is risky, so {ROLL_MARKER}."
    return f"Round {number}: I {rng.choice(CALM).format(place=place, thing=thing)}."


# The fake model


@dataclass(frozen=True, slots=True)
class Served:
    """One request the fake served: what kind, the time inside `handle`, and the request body's size."""

    kind: str  # gm_first | gm_narrate | memory | fold | other
    seconds: float
    body_bytes: int


class TimedFake(FakeModel):
    """The fake model, timing its own `handle` for each request."""

    def __init__(self) -> None:
        super().__init__(self._answer)
        self.fold_prompt = instructions("memory_fold")
        self.served: list[Served] = []
        self.anomalies: list[str] = []
        self._kind = threading.local()
        self._served_lock = threading.Lock()

    def handle(self, method: str, path: str, body: bytes) -> Response:
        started = time.perf_counter()
        self._kind.value = "other"
        response = super().handle(method, path, body)
        elapsed = time.perf_counter() - started
        with self._served_lock:
            self.served.append(Served(self._kind.value, elapsed, len(body)))
        return response

    def _answer(self, request: Request) -> Answer:
        messages: list[dict[str, Any]] = request["messages"]
        if is_judge_request(request):
            self._kind.value = "judge"
            return honest_judge(request)
        if "tools" in request:
            return self._game_master(messages)
        if messages[0]["content"] == self.fold_prompt:
            self._kind.value = "fold"
            seed = zlib.crc32(messages[-1]["content"].encode())
            return reply(compose(random.Random(seed), FOLD_WORDS, "Mara has been working the harbour by night."))
        self._kind.value = "memory"
        asked = messages[-1]["content"]
        rng = random.Random(zlib.crc32(asked.encode()))
        numbers = [int(number) for number in KEEPER_HEADING.findall(asked)]
        if len(numbers) <= 1:
            return reply(compose(rng, SUMMARY_WORDS, "Mara pressed on at the harbour."))
        # Several rounds in one request (the keeper's batches): one labelled summary each, as its prompt asks
        # (prompts/memory_keeper.txt). Unlabelled, gm would ask for each round alone again.
        return reply(
            "\n".join(f"Round {n}: {compose(rng, SUMMARY_WORDS, 'Mara pressed on at the harbour.')}" for n in numbers)
        )

    def _game_master(self, messages: list[dict[str, Any]]) -> Answer:
        last = messages[-1]
        number = _round_number(messages)
        rng = random.Random(number * 2 + (last["role"] == "tool"))
        if last["role"] == "tool":
            self._kind.value = "gm_narrate"
            result = json.loads(last["content"])
            if "band" not in result:
                self.anomalies.append(f"round {number}: the tool result was {result}")
                return call("narrate", {"narration": compose(rng, NARRATION_WORDS), "outcomes": []})
            telling = TELLINGS.get((result["result"], bool(result["critical"])), TELLINGS[(result["result"], False)])
            narration = compose(rng, NARRATION_WORDS, telling, rng.choice(ENDINGS))
            outcome = {"character": result["character"], "result": result["result"], "roll": result["roll"]}
            return call("narrate", {"narration": narration, "outcomes": [outcome]})
        self._kind.value = "gm_first"
        if last["role"] != "user" or last["content"].startswith("[game engine]"):
            self.anomalies.append(f"round {number}: unexpected last message {str(last)[:200]}")
        if ROLL_MARKER in last["content"]:
            arguments = {"check": "attempt", "character": "Mara", "target": 12, "reason": "a risky attempt"}
            return call("roll_check", arguments)
        return reply(compose(rng, NARRATION_WORDS, closing=rng.choice(ENDINGS)))


def _round_number(messages: Sequence[dict[str, Any]]) -> int:
    """The round the request is for, from the newest player text."""
    for message in reversed(messages):
        if message["role"] == "user" and (found := ROUND_TEXT.match(message["content"])):
            return int(found.group(1))
    return 0


# The run


@dataclass(slots=True)
class RoundTiming:
    number: int
    rolled: bool
    play_seconds: float
    fake_seconds: float  # the fake's handle time for this round's requests
    settle_seconds: float
    memory_fake_seconds: float
    first_body_bytes: int

    @property
    def framework_seconds(self) -> float:
        return self.play_seconds - self.fake_seconds


@dataclass(slots=True)
class Run:
    timings: list[RoundTiming]
    calls: list[ModelCall]
    call_rounds: dict[int, int]  # ModelCall.id -> round number
    refusals: int
    anomalies: list[str]
    folds: int
    seconds: float


async def play(rounds: int) -> dict[str, Run]:
    """Two stories played side by side, a round of each in turn: one judged, one with the judge off."""
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="gm-round-bench-") as folder:
        world = write_world(Path(folder) / "harbor")
        fake = TimedFake()
        fake.start()
        client = ModelClient(ModelSettings(fake.base_url, "k", fake.model))
        store = Store(f"sqlite:///{Path(folder) / 'gm.db'}")
        try:
            game = Game(client, store, source=dice.seeded_source(2026))
            stories = {judge: game.start_story(world, settings={"judge": judge}) for judge in JUDGE_SETTINGS}
            timings: dict[str, list[RoundTiming]] = {judge: [] for judge in JUDGE_SETTINGS}
            refusals = dict.fromkeys(JUDGE_SETTINGS, 0)
            for number in range(1, rounds + 1):
                for judge, story_id in stories.items():
                    mark = len(fake.served)
                    began = time.perf_counter()
                    result = await game.play(story_id, player_text(number))
                    played = time.perf_counter()
                    middle = len(fake.served)  # the fake records a request before it answers it
                    await game.settle()
                    settled = time.perf_counter()
                    during, after = fake.served[mark:middle], fake.served[middle:]
                    refusals[judge] += len(result.refusals)
                    timings[judge].append(
                        RoundTiming(
                            number,
                            bool(result.rolls),
                            played - began,
                            sum(served.seconds for served in during),
                            settled - played,
                            sum(served.seconds for served in after),
                            during[0].body_bytes,
                        )
                    )
                    fake.requests.clear()  # the fake keeps every request body; nothing here reads them
                if number % 100 == 0 or number == rounds:
                    elapsed = time.perf_counter() - started
                    print(f"  round {number}/{rounds} done, {elapsed:.0f} s", file=sys.stderr, flush=True)
            runs: dict[str, Run] = {}
            for judge, story_id in stories.items():
                calls = store.model_calls(story_id)
                with store.session() as session:
                    attempt_rounds = {
                        attempt.id: attempt.round_number
                        for attempt in session.exec(select(Attempt).where(Attempt.story_id == story_id))
                    }
                runs[judge] = Run(
                    timings[judge],
                    calls,
                    _call_rounds(calls, attempt_rounds),
                    refusals[judge],
                    list(fake.anomalies) + list(fake.failures),
                    sum(served.kind == "fold" for served in fake.served) // len(stories),
                    time.perf_counter() - started,
                )
        finally:
            await client.aclose()
            fake.close()
            store.engine.dispose()
    return runs


def _call_rounds(calls: Sequence[ModelCall], attempt_rounds: dict[str, int]) -> dict[int, int]:
    """Each call's round: a game-master call by its attempt, a memory call by the round played just before it."""
    rounds: dict[int, int] = {}
    current = 0
    for model_call in calls:
        assert model_call.id is not None
        if model_call.purpose in ("game_master", "judge") and model_call.attempt_id is not None:
            current = attempt_rounds[model_call.attempt_id]
        rounds[model_call.id] = current
    return rounds


# Statistics and tables


def p95(values: Sequence[float]) -> float:
    """The 95th percentile by nearest rank."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


def timing_table(run: Run, windows: Sequence[tuple[str, int, int]]) -> str:
    lines = [
        "| Rounds | Kind | n | framework median (ms) | framework p95 (ms) | play wall median (ms) | fake median (ms) |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for name, first, last in windows:
        window = [t for t in run.timings if first <= t.number <= last]
        for kind, rolled in (("with a roll", True), ("without a roll", False)):
            chosen = [t for t in window if t.rolled is rolled]
            if not chosen:
                continue
            framework = [t.framework_seconds for t in chosen]
            lines.append(
                f"| {name} ({first}-{last}) | {kind} | {len(chosen)} | {ms(statistics.median(framework))} "
                f"| {ms(p95(framework))} | {ms(statistics.median(t.play_seconds for t in chosen))} "
                f"| {ms(statistics.median(t.fake_seconds for t in chosen))} |"
            )
    return "\n".join(lines)


def trend_table(run: Run, width: int) -> str:
    lines = [
        "| Rounds | framework median, roll (ms) | framework median, no roll (ms) | settle median (ms) |",
        "|---|---:|---:|---:|",
    ]
    for first in range(1, len(run.timings) + 1, width):
        chunk = run.timings[first - 1 : first - 1 + width]
        rolled = [t.framework_seconds for t in chunk if t.rolled]
        plain = [t.framework_seconds for t in chunk if not t.rolled]
        settle = [t.settle_seconds - t.memory_fake_seconds for t in chunk]
        lines.append(
            f"| {first}-{chunk[-1].number} | {ms(statistics.median(rolled)) if rolled else '-'} "
            f"| {ms(statistics.median(plain)) if plain else '-'} | {ms(statistics.median(settle))} |"
        )
    return "\n".join(lines)


def calls_table(run: Run) -> str:
    per_round: dict[tuple[int, str], int] = defaultdict(int)
    for model_call in run.calls:
        assert model_call.id is not None
        per_round[(run.call_rounds[model_call.id], model_call.purpose)] += 1
    lines = ["| Calls per round | rounds | average | min | max |", "|---|---:|---:|---:|---:|"]
    rows = (
        ("game master, with a roll", "game_master", True),
        ("game master, without a roll", "game_master", False),
        ("game master, all rounds", "game_master", None),
        ("judge, with a roll", "judge", True),
        ("judge, without a roll", "judge", False),
        ("memory keeper, all rounds", "memory", None),
    )
    for name, purpose, rolled in rows:
        counts = [per_round[(t.number, purpose)] for t in run.timings if rolled is None or t.rolled is rolled]
        lines.append(f"| {name} | {len(counts)} | {statistics.fmean(counts):.3f} | {min(counts)} | {max(counts)} |")
    return "\n".join(lines)


def first_calls(run: Run) -> dict[int, ModelCall]:
    """The game master's first call of each round."""
    found: dict[int, ModelCall] = {}
    for model_call in run.calls:
        assert model_call.id is not None
        number = run.call_rounds[model_call.id]
        if model_call.purpose == "game_master" and number not in found:
            found[number] = model_call
    return found


def prompt_table(run: Run, rounds: Sequence[int]) -> str:
    firsts = first_calls(run)
    bodies = {t.number: t.first_body_bytes for t in run.timings}
    lines = [
        "| Round | roll? | prompt tokens (stored, fake's estimate) | request body (bytes) |",
        "|---:|---|---:|---:|",
    ]
    for number in rounds:
        rolled = "yes" if run.timings[number - 1].rolled else "no"
        lines.append(f"| {number} | {rolled} | {firsts[number].prompt_tokens:,} | {bodies[number]:,} |")
    return "\n".join(lines)


def prompt_summary(run: Run, ratio_rounds: tuple[int, int]) -> str:
    firsts = first_calls(run)
    low, high = ratio_rounds
    ratio = firsts[high].prompt_tokens / firsts[low].prompt_tokens
    verdict = "meets" if ratio <= RATIO_TARGET else "MISSES"
    settled = [firsts[n].prompt_tokens for n in firsts if n > min(50, len(run.timings) // 2)]
    spread = f"{min(settled):,} to {max(settled):,}" if settled else "-"
    return (
        f"Prompt tokens, round {high} / round {low}: {firsts[high].prompt_tokens:,} / {firsts[low].prompt_tokens:,} "
        f"= **{ratio:.3f}** ({verdict} the target of at most {RATIO_TARGET}). "
        f"From round {min(50, len(run.timings) // 2) + 1} on, every first call's prompt is {spread} tokens."
    )


def judge_table(runs: dict[str, Run]) -> str:
    """Framework time and calls per round with the judge on and off, and the judge's prompt size."""
    lines = [
        "| judge | framework median, rolled (ms) | framework median, plain (ms) "
        "| model calls, rolled | model calls, plain |",
        "|---|---:|---:|---:|---:|",
    ]
    for judge, run in runs.items():
        per_round: dict[int, int] = defaultdict(int)
        for model_call in run.calls:
            assert model_call.id is not None
            if model_call.purpose != "memory":
                per_round[run.call_rounds[model_call.id]] += 1
        rolled = [t for t in run.timings if t.rolled]
        plain = [t for t in run.timings if not t.rolled]
        lines.append(
            f"| {judge} | {ms(statistics.median(t.framework_seconds for t in rolled))} "
            f"| {ms(statistics.median(t.framework_seconds for t in plain))} "
            f"| {statistics.fmean(per_round[t.number] for t in rolled):.3f} "
            f"| {statistics.fmean(per_round[t.number] for t in plain):.3f} |"
        )
    judged = [c.prompt_tokens for c in runs["on"].calls if c.purpose == "judge"]
    if judged:
        lines.append(
            f"\nJudge prompt (the fake's estimate, text / 4): median {statistics.median(judged):,.0f} tokens, "
            f"from {min(judged):,} to {max(judged):,}, over {len(judged):,} judge calls."
        )
    return "\n".join(lines)


def windows_for(rounds: int, window: int) -> list[tuple[str, int, int]]:
    return [("first", 1, window), ("last", rounds - window + 1, rounds)]


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=None, help=f"rounds to play (default {FULL_ROUNDS})")
    parser.add_argument("--quick", action="store_true", help=f"smoke run: {QUICK_ROUNDS} rounds, smaller windows")
    arguments = parser.parse_args(argv)
    if arguments.rounds is None:
        arguments.rounds = QUICK_ROUNDS if arguments.quick else FULL_ROUNDS
    if arguments.rounds < 8:
        parser.error("--rounds must be at least 8")
    return arguments


def main(argv: Sequence[str] | None = None) -> None:
    arguments = parse_arguments(argv)
    rounds: int = arguments.rounds
    window = min(FULL_WINDOW, rounds // 4)
    runs = asyncio.run(play(rounds))
    run = runs["on"]
    windows = windows_for(rounds, window)
    prompt_rounds = sorted({n for n in PROMPT_ROUNDS if n <= rounds} | {rounds})
    ratio_rounds = (min(RATIO_ROUNDS[0], rounds // 2), min(RATIO_ROUNDS[1], rounds))

    print("# gm round benchmark\n")
    print(
        f"One story, {rounds:,} rounds, SQLite in a temporary folder, the real openai client over loopback HTTP "
        "against a zero-latency fake model (`gm.testing.FakeModel`, function script) serving the game master "
        "and the memory keeper. Odd rounds roll a check (roll_check, then narrate), even rounds end in plain text. "
        "`game.settle()` runs after every round, outside the round's timing.\n"
    )
    print("## Framework time per round\n")
    print(timing_table(run, windows))
    print(
        "\nFramework time = wall time of `game.play` minus the time the fake spent inside `FakeModel.handle` "
        "for that round's requests (measured in the fake's thread). **Included**: gm (the story's world, built "
        "once and kept, recall and prompt, tool dispatch and argument validation, referee, SQLite reads and writes, "
        "the lease), the openai client and tenacity, and the loopback HTTP round-trips on both sides (httpx, "
        "the kernel, `http.server` parsing and writing in the fake's thread; the fake speaks HTTP/1.0, so each "
        "request opens a new TCP connection). **Excluded**: the fake's `handle` (request JSON parsing, the "
        "script, the answer's JSON). p95 is by nearest rank. The memory keeper's work is not in these figures.\n"
    )
    trend_width = max(1, rounds // 10)
    print(f"### Trend, median per {trend_width} rounds\n")
    print(trend_table(run, trend_width))
    print(
        "\n`settle` = wall time of `game.settle()` after the round (the memory keeper: one summary, and a fold "
        "when one is due) minus the fake's time serving it.\n"
    )
    print("## Model calls per round\n")
    print(calls_table(run))
    print(
        f"\nFrom the store's `model_calls` table: game-master calls grouped by attempt, memory calls counted for "
        f"the round played just before them. Folds: {run.folds} in {rounds:,} rounds. Refusals: {run.refusals}.\n"
    )
    print("## The game master's prompt\n")
    print(prompt_table(run, prompt_rounds))
    print(
        "\nFirst game-master call of each round. Prompt tokens are `ModelCall.prompt_tokens` as stored: the fake's "
        "estimate, the text of the request's messages / 4 (tool schemas not counted). The request body is the "
        "JSON sent over HTTP, tool schemas included. Past the first rounds the size swings within a band: "
        "the memory keeper folds every few rounds (4 to 8 round summaries are shown between folds), and summaries "
        "of rounds that rolled carry their dice.\n"
    )
    print(prompt_summary(run, ratio_rounds) + "\n")
    print("## The judge: on against off, side by side\n")
    print(judge_table(runs))
    print(
        "\nThe two stories are played in turn in one process, a round of each, so both see the same machine. "
        "Framework time is measured as above; judge calls come from the store. A plain round is never judged.\n"
    )
    if run.anomalies:
        print("## Anomalies\n")
        print("\n".join(f"- {anomaly}" for anomaly in run.anomalies[:20]) + "\n")
    today = datetime.date.today().isoformat()
    print(
        f"_Python {platform.python_version()} ({platform.python_implementation()}), {today}, "
        f"total benchmark time {run.seconds:.0f} s._"
    )


if __name__ == "__main__":
    main()
