"""The terminal chat through a database outage mid-round: one line, and the chat goes on (issue 40, hole 4)."""

from __future__ import annotations

import asyncio
import io
import sqlite3
from typing import Any

from sqlalchemy.exc import OperationalError

from gm.chat.terminal import Chat


async def outage() -> Any:
    raise OperationalError("UPDATE story", {}, sqlite3.OperationalError("disk I/O error"))


def test_a_round_the_database_fails_is_one_line_and_the_chat_goes_on() -> None:
    out = io.StringIO()
    chat = Chat(object(), "s", interactive=True, out=out)  # type: ignore[arg-type]  # the round needs no game
    asyncio.run(chat.round(outage()))
    assert chat.rounds_failed == 1
    said = " ".join(out.getvalue().split())  # the console wraps at its width
    assert said == "error: the database cannot be used just now (disk I/O error); try again in a moment"
