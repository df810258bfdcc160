"""Benchmark of the model client: CPU per model call, and CPU per call with N calls in flight.

What it measures
----------------
The real `gm.models.client.ModelClient` (the openai client over loopback HTTP) against a fake chat
completion server running in its own process, so that the CPU counted (`time.process_time` of the
measuring process, all its threads) is gm's and the client's, never the fake's. The fake is a small
asyncio HTTP/1.1 server with kept connections, as a real model server has; it answers by what the
request is:

- `gm`: the game master's first call of a rolled round: the harbour world's prompt (world, memory,
  three verbatim rounds, the player's text) with its tools; the answer is a `roll_check` call.
- `narrate`: the same conversation with that call and its result; the answer is a `narrate` call
  with a narration of about 120 words and one outcome.
- `judge`: the judge's structured call (`gm.engine.judge.Judge.judge`, `response_format` json_schema),
  its verdicts read.
- `plain`: a call without tools (as the memory keeper makes), answered with about 60 words.
- `pool N`: N tasks each making `gm` calls back to back against a fake that waits `--delay` seconds
  before answering, so about N requests are in flight at once and the client's connection pool
  holds about N connections; CPU per call.

Side by side: with `--baseline TREE`, each measurement runs in a fresh child process, alternating
between this tree (this Python) and TREE (TREE/.venv/bin/python, importing TREE's gm), `--reps`
times each; the figures are the medians over the repetitions, and the ratio is this / baseline.
Only API present in both trees is used (ModelClient, ModelSettings, Judge, tool_schemas, prompt).

How to run
----------
From the project root, with the virtualenv active::

    python bench/client_bench.py --baseline /work/base           # a few minutes
    python bench/client_bench.py --baseline /work/base --quick   # fewer calls and repetitions
    python bench/client_bench.py --profile gm                    # cProfile of one measure, this tree only

The output is Markdown; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
MEASURES = ("gm", "narrate", "judge", "plain", "round")
ROLL_MARKER = "let the dice decide"
POOL_SIZES = (1, 10, 100, 300)
NARRATION = ("Rain needles across the harbour office, and the gutters run black with tar and old salt. " * 8).strip()
SUMMARY = ("Mara pressed on at the harbour, and Jon kept watch by the tide gate. " * 5).strip()


# The fake model server (its own process)


def _answer(request: dict[str, Any]) -> dict[str, Any]:
    """The chat completion for one request, by what the request is (see the module docstring)."""
    messages = request.get("messages") or [{}]
    if "response_format" in request:
        from gm.engine.prompt import read_judge_request

        asked = read_judge_request(next(m["content"] for m in messages if m.get("role") == "user"))
        told = [(o.character, o.result) for o in asked.outcomes] if asked else [("Mara", "succeeded")]
        verdicts = {"outcomes": [{"character": who, "told_as": result, "quote": "so it goes"} for who, result in told]}
        message: dict[str, Any] = {"role": "assistant", "content": json.dumps(verdicts)}
    elif request.get("tools") and messages[-1]["role"] == "user" and ROLL_MARKER not in messages[-1]["content"]:
        message = {"role": "assistant", "content": NARRATION}
    elif request.get("tools"):
        if messages[-1].get("role") == "tool":
            result = json.loads(messages[-1]["content"])
            outcome = {"character": "Mara", "result": result.get("result", "succeeded"), "roll": result.get("roll", 1)}
            arguments = {"narration": NARRATION, "outcomes": [outcome]}
            name = "narrate"
        else:
            arguments = {"check": "attempt", "character": "Mara", "target": 12, "reason": "a risky attempt"}
            name = "roll_check"
        call = {"id": "call_1", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
    else:
        message = {"role": "assistant", "content": SUMMARY}
    return {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 0,
        "model": request.get("model", "fake"),
        "choices": [{"index": 0, "message": message, "finish_reason": "stop", "logprobs": None}],
        "usage": {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100},
    }


async def _serve_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            request = json.loads(body)
            delay = request.get("model", "").rpartition("-")[2]
            if delay.isdigit() and int(delay):
                await asyncio.sleep(int(delay) / 1000)
            data = json.dumps(_answer(request)).encode()
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                + f"Content-Length: {len(data)}\r\n\r\n".encode()
                + data
            )
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def _serve() -> None:
    server = await asyncio.start_server(_serve_connection, "127.0.0.1", 0, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


# One measurement (a child process, in either tree)

# Where each module was before gm's modules moved into folders, for a baseline tree from before then.
_FLAT = {
    "gm.world.loading": "gm.world",
    "gm.engine.prompt": "gm.prompt",
    "gm.engine.judge": "gm.judge",
    "gm.engine.tools.offered": "gm.tools_offered",
    "gm.models.client": "gm.model",
    "gm.engine.game": "gm.game",
}


def _test_worlds() -> Any:
    """The tests' sample worlds of the tree whose gm this process imported (this one or the baseline's): the module
    `tests/support/worlds.py`, or in a tree from before the tests were sorted into folders, `tests/conftest.py`."""
    import gm

    tests = Path(gm.__file__).resolve().parent.parent / "tests"
    support = tests / "support"
    sys.path.insert(0, str(support if (support / "worlds.py").exists() else tests))
    return importlib.import_module("worlds" if (support / "worlds.py").exists() else "conftest")


def _from_gm(module: str, *names: str) -> list[Any]:
    """`names` from a module of gm, as this tree lays it out or as a tree from before the move lays it out."""
    try:
        found = importlib.import_module(module)
    except ModuleNotFoundError:
        found = importlib.import_module(_FLAT[module])
    return [getattr(found, name) for name in names]


def _world() -> Any:
    worlds = _test_worlds()
    (load_world,) = _from_gm("gm.world.loading", "load_world")
    HARBOR_DICE, HARBOR_WORLD = worlds.HARBOR_DICE, worlds.HARBOR_WORLD

    folder = Path(tempfile.mkdtemp(prefix="gm-client-bench-"))
    (folder / "world.json").write_text(json.dumps(HARBOR_WORLD))
    (folder / "dice.json").write_text(json.dumps(HARBOR_DICE))
    return load_world(folder)


def _conversation(world: Any) -> list[dict[str, Any]]:
    """A rolled round's first request, as the round engine builds it at about round 100."""
    Past, PlayerTurn, game_master_messages = _from_gm("gm.engine.prompt", "Past", "PlayerTurn", "game_master_messages")

    past = Past(summary=SUMMARY * 4, memories=(), recent=())
    messages = game_master_messages(world, past, PlayerTurn(f"I try to pick the lock; {ROLL_MARKER}."))
    recent = []
    for number in range(3):
        recent += [
            {"role": "user", "content": f"Round {number}: I look around the net sheds."},
            {"role": "assistant", "content": NARRATION},
        ]
    return messages[:-1] + recent + messages[-1:]


async def _measure(port: int, measure: str, calls: int, delay_ms: int) -> dict[str, float]:
    (Judge,) = _from_gm("gm.engine.judge", "Judge")
    JudgedOutcome, JudgeRequest = _from_gm("gm.engine.prompt", "JudgedOutcome", "JudgeRequest")
    (tool_schemas,) = _from_gm("gm.engine.tools.offered", "tool_schemas")
    ModelClient, ModelSettings = _from_gm("gm.models.client", "ModelClient", "ModelSettings")

    world = _world()
    tools = tool_schemas(world)
    first = _conversation(world)
    rolled = {"roll": 7, "check": "attempt", "character": "Mara", "band": "Success", "result": "succeeded"}
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "roll_check", "arguments": '{"check": "attempt", "character": "Mara", "target": 12}'},
    }
    second = [
        *first,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": json.dumps(rolled)},
    ]
    asked = JudgeRequest(NARRATION, (JudgedOutcome("Mara", "Attempt", "Success", "succeeded", False),))
    client = ModelClient(ModelSettings(f"http://127.0.0.1:{port}/v1", "k", f"fake-{delay_ms}", tools="native"))
    judge = Judge(client, "fake")

    async def one() -> None:
        if measure in ("gm", "pool"):
            await client.complete(first, tools=tools)
        elif measure == "narrate":
            await client.complete(second, tools=tools)
        elif measure == "judge":
            await judge.judge(asked)
        else:
            await client.complete([*first[:1], {"role": "user", "content": NARRATION}])

    async def worker(count: int) -> None:
        for _ in range(count):
            await one()

    if measure == "round":
        return await _rounds(client, calls)
    width = max(1, int(os.environ.get("GM_BENCH_POOL", "1")))
    share = [calls // width + (index < calls % width) for index in range(width)]
    # Warm up with half as many calls again: connections, imports, caches, and the clients a pool opens.
    await asyncio.gather(*(worker(max(2, count // 2)) for count in share))
    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker(count) for count in share))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    await client.aclose()
    return {"cpu_ms": cpu * 1000 / calls, "wall_ms": wall * 1000 / calls}


async def _rounds(client: Any, rounds: int) -> dict[str, float]:
    """Rounds of one story through `Game` on SQLite, rolled and plain in turn: CPU and wall per round, median."""
    from gm import dice
    from gm.store import Store

    (Game,) = _from_gm("gm.engine.game", "Game")
    write_world = _test_worlds().write_world

    folder = Path(tempfile.mkdtemp(prefix="gm-client-bench-"))
    store = Store(f"sqlite:///{folder / 'gm.db'}")
    game = Game(client, store, source=dice.seeded_source(2026))
    story = game.start_story(write_world(folder / "harbor"))
    timings: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    for number in range(1, rounds + 21):
        rolled = number % 2 == 1
        text = f"Round {number}: I try the lock; {ROLL_MARKER}." if rolled else f"Round {number}: I look around."
        cpu, wall = time.process_time(), time.perf_counter()
        await game.play(story, text)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        await game.settle()  # the memory keeper's work, outside the round's figures
        if number > 20:  # the first rounds warm up: imports, caches, connections
            timings[rolled].append((cpu, wall))
    await client.aclose()
    store.engine.dispose()
    figures = {}
    for rolled, name in ((True, "rolled"), (False, "plain")):
        figures[f"{name}_cpu_ms"] = statistics.median(cpu for cpu, _ in timings[rolled]) * 1000
        figures[f"{name}_wall_ms"] = statistics.median(wall for _, wall in timings[rolled]) * 1000
    return figures


# The parent: the fake, the children, the table


def _start_fake() -> tuple[subprocess.Popen[str], int]:
    fake = subprocess.Popen([sys.executable, str(HERE), "--serve"], stdout=subprocess.PIPE, text=True)
    assert fake.stdout is not None
    return fake, int(fake.stdout.readline())


def _child(python: str, tree: Path, port: int, measure: str, calls: int, delay_ms: int, width: int) -> dict[str, float]:
    command = [python, str(HERE), "--measure", measure, "--port", str(port), "--calls", str(calls)]
    command += ["--delay-ms", str(delay_ms)]
    env = {**os.environ, "GM_BENCH_POOL": str(width), "PYTHONPATH": str(tree)}
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"the {measure} measurement failed in {tree}:\n{done.stderr}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--baseline", type=Path, help="a tree (with its .venv) to measure side by side")
    parser.add_argument("--quick", action="store_true", help="fewer calls and repetitions")
    parser.add_argument("--reps", type=int, default=None, help="repetitions of each measurement (default 5)")
    parser.add_argument("--calls", type=int, default=None, help="calls per measurement (default 400)")
    parser.add_argument("--delay", type=float, default=0.05, help="the fake's wait in the pool measures, seconds")
    parser.add_argument("--pools", default=",".join(map(str, POOL_SIZES)), help="pool sizes, comma-separated")
    parser.add_argument("--profile", choices=MEASURES, help="cProfile one measure in this process instead")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--delay-ms", type=int, default=0, help=argparse.SUPPRESS)
    arguments = parser.parse_args(argv)
    if arguments.serve:
        asyncio.run(_serve())
        return
    calls = arguments.calls or (150 if arguments.quick else 400)
    if arguments.measure:
        print(json.dumps(asyncio.run(_measure(arguments.port, arguments.measure, calls, arguments.delay_ms))))
        return
    fake, port = _start_fake()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # so a killed run still stops its fake (finally, below)
    try:
        if arguments.profile:
            _profile(port, arguments.profile, calls)
            return
        _compare(arguments, port, calls)
    finally:
        fake.terminate()
        fake.wait()


def _profile(port: int, measure: str, calls: int) -> None:
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    result = asyncio.run(_measure(port, measure, calls, 0))
    profiler.disable()
    print(json.dumps(result), file=sys.stderr)
    pstats.Stats(profiler).sort_stats("tottime").print_stats(35)
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(60)


def _compare(arguments: argparse.Namespace, port: int, calls: int) -> None:
    reps = arguments.reps or (3 if arguments.quick else 5)
    variants = {"this": (sys.executable, HERE.parent.parent)}
    if arguments.baseline:
        base = arguments.baseline.resolve()
        variants["baseline"] = (str(base / ".venv" / "bin" / "python"), base)
    pools = [int(size) for size in arguments.pools.split(",") if size]
    delay_ms = round(arguments.delay * 1000)
    plan = [(measure, 0, 1, calls) for measure in MEASURES]
    plan += [("pool", delay_ms, size, max(calls, 2 * size)) for size in pools]
    figures: dict[tuple[str, int, str], list[dict[str, float]]] = {}
    for rep in range(reps):
        order = list(variants) if rep % 2 == 0 else list(reversed(variants))
        for measure, delay, width, count in plan:
            for name in order:
                python, tree = variants[name]
                figures.setdefault((measure, width, name), []).append(
                    _child(python, tree, port, measure, count, delay, width)
                )
        print(f"  repetition {rep + 1}/{reps} done", file=sys.stderr, flush=True)
        print(json.dumps({" ".join(map(str, key)): runs for key, runs in figures.items()}), file=sys.stderr, flush=True)
    print("# gm model client benchmark\n")
    header = "| measure | " + " | ".join(f"{name} CPU ms/call | {name} wall ms/call" for name in variants)
    header += " | CPU ratio |" if "baseline" in variants else " |"
    print(header)
    print("|---|" + "---:|" * (2 * len(variants) + ("baseline" in variants)))
    rows = []
    for measure, _delay, width, _count in plan:
        if measure == "round":
            rows += [
                ("round, rolled (per round)", measure, width, "rolled_"),
                ("round, plain (per round)", measure, width, "plain_"),
            ]
        else:
            label = f"pool N={width} ({delay_ms} ms fake)" if measure == "pool" else f"{measure} (per call)"
            rows.append((label, measure, width, ""))
    for label, measure, width, prefix in rows:
        cells, cpu = [], {}
        for name in variants:
            runs = figures[(measure, width, name)]
            cpu[name] = statistics.median(run[f"{prefix}cpu_ms"] for run in runs)
            cells += [f"{cpu[name]:.3f}", f"{statistics.median(run[f'{prefix}wall_ms'] for run in runs):.3f}"]
        if "baseline" in variants:
            cells.append(f"{cpu['this'] / cpu['baseline']:.2f}")
        print(f"| {label} | " + " | ".join(cells) + " |")
    print(
        f"\nMedians over {reps} repetitions, each a fresh process per variant, variants alternating; "
        f"{calls} calls per measure (pool: at least 2N). CPU = the measuring process's `time.process_time`; "
        "the fake runs in its own process."
    )


if __name__ == "__main__":
    main()
