"""A logging proxy between a chat front end and `gm serve`: what the front end really sends, one JSON line each.

    python bench/request_log.py --listen 127.0.0.1:8791 --to http://127.0.0.1:8790 --log requests.jsonl

Every request is forwarded as it came (method, path, query, body, headers but Host) and its answer is
streamed back as it arrives, so a front end's "stop" reaches gm as a closed connection, as it would
without the proxy. Each line of the log holds the time, method, path, the headers a front end chose
(Authorization is written as present or not, never its value), the JSON body, the answer's status and
gm's answer (the completion's text, streamed or not, or its error).
`bench/front_ends.py` runs it; the fixtures under tests/fixtures/front_ends/ came from its logs.
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


MAX_ANSWER = 1 << 20


def answer_text(body: bytes) -> str | dict[str, Any] | None:
    """What gm answered: a completion's content (streamed or not), or its error object, or None."""
    text = body.decode("utf-8", "replace")
    if text.startswith("data:") or "\ndata:" in text:
        content, error = "", None
        for line in text.splitlines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            event = json.loads(line[6:])
            if "error" in event:
                error = event["error"]
            for choice in event.get("choices") or []:
                content += (choice.get("delta") or {}).get("content") or ""
        return error if error is not None else content
    try:
        parsed = json.loads(text)
    except ValueError:
        return None
    if isinstance(parsed, dict) and parsed.get("choices"):
        return parsed["choices"][0]["message"]["content"]
    return parsed.get("error") if isinstance(parsed, dict) else None


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
                answer = bytearray()
                async for piece in upstream.content.iter_any():
                    answer += piece[: MAX_ANSWER - len(answer)]
                    await response.write(piece)
                await response.write_eof()
                entry["answer"] = answer_text(bytes(answer))
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
    app = make_app(arguments.to.rstrip("/"), arguments.log)
    # handler_cancellation: a front end that closes its connection (its Stop) closes the one to gm at once too.
    web.run_app(app, host=host, port=int(port), print=None, handler_cancellation=True)


if __name__ == "__main__":
    main()
