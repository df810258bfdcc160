"""The memory a bare ASGI server keeps after a load shaped like serve_bench's: the floor under gm serve's figure.

bench/serve_bench.py reads `gm serve`'s resident memory before a load of 1,000 stories played back to back,
at its peak, and once it has been idle 8 s (issue 40's goal: back within 10% of before). This script plays
the same load on a server with none of gm in it, to tell what the runtime keeps from what gm keeps:

- the server: uvicorn (one worker, httptools, as `gm serve` runs it) and a FastAPI app of one route,
  `POST /api/stories/{id}/messages`, that holds a round's worth of small objects (`--objects` dicts and
  lists, about 50 KiB, what a round in flight holds in `gm serve`: docs/performance.md) across two
  awaits of the model's delay and one job on a worker thread (the database's), then answers a short JSON;
- untuned, then tuned: the app calls `gm.web.process.tune_server_process()` at start-up, as `gm serve` does
  (the collector by the clock, and glibc's free memory given back once the process is quiet); then tuned with
  every object allocated by glibc (`PYTHONMALLOC=malloc`), whose free pages the trim can give back one by one;
- the load: `--stories` kept connections (bench/serve_processes.py's client), each posting back to back
  for `--seconds`, then closed; RSS read before, every 0.5 s during, and `--idle` seconds after.

Run:

    python bench/rss_floor.py                         # three variants, 1,000 stories, 15 s, 0.2 s delay
    python bench/rss_floor.py --stories 100 --seconds 5

The report prints one line a variant: RSS before / peak / idle after (MiB), and idle after / before.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from serve_processes import Connection  # noqa: E402  (bench/ is not a package)

STARTUP_SECONDS = 30.0


def app_factory() -> object:
    """The bare app (imported by uvicorn in the server process: `rss_floor:app_factory`, `--factory`)."""
    from fastapi import FastAPI

    delay = float(os.environ["FLOOR_DELAY"])
    objects = int(os.environ["FLOOR_OBJECTS"])
    app = FastAPI()

    def database_work(state: list[object]) -> int:
        return sum(len(item) for item in state if isinstance(item, dict))

    @app.post("/api/stories/{story_id}/messages")
    async def message(story_id: str, body: dict[str, str]) -> dict[str, object]:
        # A round's state: small dicts and lists that live across the model's two delays, as gm's do.
        state: list[object] = []
        for index in range(objects):
            if index % 2:
                state.append({"story": story_id, "index": index, "text": body.get("text", "") + str(index)})
            else:
                state.append([story_id, index, f"{index:08d}", None])
        await asyncio.sleep(delay)
        counted = await asyncio.to_thread(database_work, state)
        await asyncio.sleep(delay)
        return {"story": story_id, "counted": counted, "narration": "The lock gives." * 8}

    if os.environ.get("FLOOR_TUNED") == "1":
        from gm.web.process import tune_server_process

        tune_server_process()
    return app


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def rss_mib(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")) / 1024


async def wait_ready(port: int) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return
        except OSError:
            await asyncio.sleep(0.1)
    raise RuntimeError(f"the bare server did not listen on port {port} within {STARTUP_SECONDS:.0f} s")


async def play(port: int, pid: int, stories: int, seconds: float, idle: float) -> tuple[float, float, float, int]:
    """RSS before, at the peak and after `idle` s; rounds answered."""
    await asyncio.sleep(1.0)
    before = rss_mib(pid)
    peak = before
    answered = 0
    deadline = time.perf_counter() + seconds

    async def story(index: int) -> None:
        nonlocal answered
        connection = Connection(port)
        try:
            await asyncio.sleep(index % 100 / 100)  # a ramp of 1 s, as serve_bench's
            while time.perf_counter() < deadline:
                status, _ = await connection.request(
                    "POST", f"/api/stories/s{index}/messages", {"text": "I work at the strongroom lock, quietly."}
                )
                if status != 200:
                    raise RuntimeError(f"the bare server answered {status}")
                answered += 1
        finally:
            connection.close()

    async def watch() -> None:
        nonlocal peak
        while time.perf_counter() < deadline + 2:
            peak = max(peak, rss_mib(pid))
            await asyncio.sleep(0.5)

    watcher = asyncio.create_task(watch())
    await asyncio.gather(*(story(index) for index in range(stories)))
    await watcher
    await asyncio.sleep(idle)
    return before, peak, rss_mib(pid), answered


def run(tuned: bool, allocator: str, options: argparse.Namespace) -> str:
    port = free_port()
    env = {
        **os.environ,
        "PYTHONMALLOC": allocator,
        "PYTHONPATH": os.pathsep.join([str(HERE), str(HERE.parent)]),
        "FLOOR_DELAY": str(options.delay),
        "FLOOR_OBJECTS": str(options.objects),
        "FLOOR_TUNED": "1" if tuned else "0",
    }
    command = [sys.executable, "-m", "uvicorn", "--factory", "rss_floor:app_factory", "--port", str(port)]
    command += ["--http", "httptools", "--log-level", "warning", "--no-access-log"]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        asyncio.run(wait_ready(port))
        before, peak, after, answered = asyncio.run(
            play(port, process.pid, options.stories, options.seconds, options.idle)
        )
    finally:
        process.terminate()
        _, errors = process.communicate(timeout=30)
    if errors.strip():
        print(errors.decode(errors="replace")[-2000:], file=sys.stderr)
    name = ("tuned (tune_server_process)" if tuned else "untuned") + f", PYTHONMALLOC={allocator}"
    return (
        f"| bare FastAPI, {name} | {options.stories:,} | {answered / options.seconds:.1f} | "
        f"{before:.0f} / {peak:.0f} / {after:.0f} | {after / before:.2f}x |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stories", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--delay", type=float, default=0.2, help="each of the round's two waits (the model's)")
    parser.add_argument("--objects", type=int, default=230, help="small objects a round holds while in flight")
    parser.add_argument("--idle", type=float, default=8.0, help="seconds idle before RSS is read again")
    options = parser.parse_args()
    print("| server | stories | rounds/s | RSS before / peak / idle after (MiB) | idle after / before |")
    print("|---|---:|---:|---:|---:|")
    for tuned, allocator in ((False, "pymalloc"), (True, "pymalloc"), (True, "malloc")):
        print(run(tuned, allocator, options), flush=True)


if __name__ == "__main__":
    main()
