"""A logging proxy between a chat front end and `gm serve`: what the front end really sends, one JSON line each.

    python bench/request_log.py --listen 127.0.0.1:8791 --to http://127.0.0.1:8790 --log requests.jsonl

Every request is forwarded as it came (method, path, query, body, headers but Host) and its answer is
streamed back as it arrives, so a front end's "stop" reaches gm as a closed connection, as it would
without the proxy. Each line of the log holds the time, method, path, the headers a front end chose
(Authorization is written as present or not, never its value), the JSON body, and the answer's status.
`bench/front_ends.py` runs it; the fixtures under tests/web/compat/fixtures/ came from its logs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any

from aiohttp import ClientSession, ClientTimeout, web

SKIPPED = {"host", "content-length", "transfer-encoding", "connection", "accept-encoding"}
SHOWN = ("content-type", "accept", "user-agent", "x-title", "http-referer")


def chosen_headers(headers: Any) -> dict[str, str]:
    """The headers worth keeping: a front end's own `X-...` ones and a few that say who it is."""
    kept: dict[str, str] = {}
    for name, value in headers.items():
        lower = name.lower()
        if lower.startswith("x-") or lower in SHOWN:
            kept[lower] = value
    kept["authorization"] = "present" if "authorization" in {name.lower() for name in headers} else "absent"
    return kept


def make_app(target: str, log_path: Path) -> web.Application:
    session: dict[str, ClientSession] = {}

    async def start(app: web.Application) -> None:
        session["s"] = ClientSession(timeout=ClientTimeout(total=None, sock_read=None))

    async def stop(app: web.Application) -> None:
        await session["s"].close()

    async def forward(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        entry: dict[str, Any] = {
            "at": round(time.time(), 3),
            "method": request.method,
            "path": request.path_qs,
            "headers": chosen_headers(request.headers),
        }
        try:
            entry["body"] = json.loads(body) if body else None
        except ValueError:
            entry["body_text"] = body[:2000].decode("utf-8", "replace")
        headers = {name: value for name, value in request.headers.items() if name.lower() not in SKIPPED}
        response = web.StreamResponse()
        try:
            async with session["s"].request(
                request.method, target + request.path_qs, data=body, headers=headers
            ) as upstream:
                entry["status"] = upstream.status
                response.set_status(upstream.status)
                for name, value in upstream.headers.items():
                    if name.lower() not in SKIPPED and name.lower() != "content-encoding":
                        response.headers[name] = value
                await response.prepare(request)
                async for piece in upstream.content.iter_any():
                    await response.write(piece)
                await response.write_eof()
        except (asyncio.CancelledError, ConnectionResetError):
            entry["cancelled"] = True  # the front end went away: the upstream request is closed with it
            raise
        finally:
            with log_path.open("a", encoding="utf-8") as log:
                log.write(json.dumps(entry) + "\n")
        return response

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.on_startup.append(start)
    app.on_cleanup.append(stop)
    app.router.add_route("*", "/{tail:.*}", forward)
    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", default="127.0.0.1:8791")
    parser.add_argument("--to", default="http://127.0.0.1:8790")
    parser.add_argument("--log", type=Path, required=True)
    arguments = parser.parse_args()
    host, _, port = arguments.listen.rpartition(":")
    web.run_app(make_app(arguments.to.rstrip("/"), arguments.log), host=host, port=int(port), print=None)


if __name__ == "__main__":
    main()
