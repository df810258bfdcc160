"""The processes bench/serve_bench.py drives: `gm serve` servers, the fake model, and a lean asyncio HTTP client.

Kept apart from the scenarios so that each file reads on its own; nothing here is specific to one scenario.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import time
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from sqlalchemy.engine import make_url

HERE = Path(__file__).resolve().parent
WORLDS = HERE.parent / "worlds"
STARTUP_SECONDS = 90.0
IDLE_SECONDS = 0.5  # the fake is idle when no request has come or been in flight this long
DRAIN_SECONDS = 120.0


class Connection:
    """One kept HTTP/1.1 connection on asyncio streams; opened on first use, and again if the server closes it.

    Far cheaper per request than httpx or a thread per client, so 1,000 players do not load the bench.
    """

    def __init__(self, port: int) -> None:
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def request(self, method: str, path: str, body: Any = None, token: str | None = None) -> tuple[int, Any]:
        """Send one request and read its answer; a kept connection the server closed meanwhile is opened again.

        uvicorn closes a connection idle for 5 s (a player thinking): if the answer's first byte never
        comes on a reused connection, the server never read the request, and it is sent again on a new one.
        """
        reused = self.writer is not None and self.reader is not None and not self.reader.at_eof()
        if not reused:
            self.close()
        try:
            return await self._exchange(method, path, body, token)
        except (asyncio.IncompleteReadError, ConnectionError) as error:
            self.close()
            if not reused or (isinstance(error, asyncio.IncompleteReadError) and error.partial):
                raise
            return await self._exchange(method, path, body, token)

    async def _exchange(self, method: str, path: str, body: Any, token: str | None) -> tuple[int, Any]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port, limit=1 << 22)
        assert self.reader is not None
        data = json.dumps(body).encode() if body is not None else b""
        auth = f"Authorization: Bearer {token}\r\n" if token else ""
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n{auth}\r\n"
        )
        self.writer.write(head.encode() + data)
        await self.writer.drain()
        lines = (await self.reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
        if "content-length" in headers:
            answer = await self.reader.readexactly(int(headers["content-length"]))
        else:  # chunked
            parts = []
            while size := int((await self.reader.readuntil(b"\r\n")).strip(), 16):
                parts.append((await self.reader.readexactly(size + 2))[:-2])
            await self.reader.readuntil(b"\r\n")
            answer = b"".join(parts)
        if headers.get("connection") == "close":
            self.close()
        return status, json.loads(answer) if answer else None

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


class Fake:
    """bench/fake_server.py's process (`serve` script), and its statistics."""

    def __init__(self, process: subprocess.Popen[str], port: int) -> None:
        self.process = process
        self.port = port
        self.base_url = f"http://127.0.0.1:{port}/v1"
        self._connection = Connection(port)

    async def stats(self) -> dict[str, Any]:
        status, body = await self._connection.request("GET", "/bench/stats")
        assert status == 200, body
        return dict(body)

    async def reset(self, delay: float) -> None:
        """Forget the counts; answer every chat completion after `delay` seconds from now on."""
        await self._connection.request("POST", "/bench/reset", {"delay": delay})

    async def drain(self) -> None:
        """Wait until the memory keeper's calls are over: the fake has been idle for a while."""
        deadline = time.monotonic() + DRAIN_SECONDS
        while time.monotonic() < deadline:
            stats = await self.stats()
            if not stats["in_flight"] and stats["idle"] >= IDLE_SECONDS:
                return
            await asyncio.sleep(0.1)


@contextmanager
def start_fake() -> Iterator[Fake]:
    """bench/fake_server.py's `serve` script in its own process."""
    from fake_server import fake_process

    with fake_process("serve") as (process, port):
        yield Fake(process, port)


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    port: int
    log: Path

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")[-4000:] if self.log.exists() else ""

    def cpu_seconds(self) -> float:
        """User and system CPU time of the server process so far, from /proc."""
        try:
            fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_mib(self) -> float:
        """The server process's resident memory now, from /proc (0 if it has gone)."""
        try:
            status = Path(f"/proc/{self.process.pid}/status").read_text()
        except OSError:
            return 0.0
        kilobytes = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
        return kilobytes / 1024

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=15)


@dataclass
class Setup:
    """One variant's servers on one database."""

    variant: str
    database: str
    servers: list[Server]
    url: str = ""  # the database's URL (PostgreSQL: where the story rows' updates are counted)

    def stop(self) -> None:
        for server in self.servers:
            server.stop()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def start_servers(
    python: str, database_url: str, fake: Fake, folder: Path, count: int, extra: dict[str, str] | None = None
) -> Iterator[list[Server]]:
    """`count` `gm serve` processes run by `python` on one database, each on its own port; always terminated.
    `extra`: environment variables of theirs (a baseline tree's PYTHONPATH)."""
    env = {
        **os.environ,
        **(extra or {}),
        "GM_DATABASE_URL": database_url,
        "OPENAI_BASE_URL": fake.base_url,
        "OPENAI_API_KEY": "bench-key",
        "GM_MODEL": "fake-model",
        "GM_HOME": str(folder / "gm-home"),
    }
    env.pop("GM_API_TOKEN", None)
    servers: list[Server] = []
    try:
        for _ in range(count):
            port = free_port()
            log = folder / f"server-{port}.log"
            command = [python, "-m", "gm.cli", "serve", "--worlds", str(WORLDS), "--host", "127.0.0.1"]
            with log.open("wb") as output:
                process = subprocess.Popen(
                    [*command, "--port", str(port)],
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    cwd=str(folder),
                )
            servers.append(Server(process, port, log))
        deadline = time.monotonic() + STARTUP_SECONDS
        for server in servers:
            while not _answers(server.port):
                if server.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"gm serve did not start (exit {server.process.poll()}):\n{server.output()}")
                time.sleep(0.1)
        yield servers
    finally:
        for server in servers:
            server.stop()


def _answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/worlds", timeout=2) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


def story_updates(url: str) -> int:
    """Rows of the stories table PostgreSQL has updated so far (pg_stat_user_tables.n_tup_upd), once the servers'
    connections have reported theirs: a backend reports its counts within about 10 s of going idle, so this
    waits until two reads 2 s apart agree (at most 16 s)."""
    url = url.replace("postgresql+psycopg://", "postgresql://")
    query = "SELECT coalesce(sum(n_tup_upd), 0) FROM pg_stat_user_tables WHERE relname = 'stories'"
    seen, deadline = -1, time.monotonic() + 16
    with psycopg.connect(url, autocommit=True) as connection:
        while True:
            row = connection.execute(query).fetchone()
            count = int(row[0]) if row else 0
            if count == seen or time.monotonic() > deadline:
                return count
            seen = count
            time.sleep(2)


@contextmanager
def postgres_database(admin_url: str) -> Iterator[str]:
    """A fresh database on the server `admin_url` names, dropped after."""
    name = f"gm_bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        # The same server by the same way in (a host, or a Unix socket's folder as `?host=`), another database.
        yield make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
