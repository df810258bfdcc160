"""`GET /api/stories/{id}` answers a page of the transcript, bounded (issue 40, hole 6, its second part): by
default the newest 200 rounds, or those `after` and `limit` ask for, with `page` saying which and whether
earlier or later rounds exist. The audit still reads the story whole."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gm.store import Store
from gm.testing import reply
from tests.support.web import served_app, start_story

ROUNDS = 5


def played(client: Any, count: int) -> tuple[str, dict[str, str]]:
    """A story of `count` rounds, each with the player's own roll."""
    story, auth = start_story(client)
    for number in range(1, count + 1):
        answer = client.post(f"/api/stories/{story}/messages", json={"text": f"/roll 1d6 try {number}"}, headers=auth)
        assert answer.status_code == 200, answer.text
    return story, auth


def page(client: Any, story: str, auth: dict[str, str], query: str = "") -> dict[str, Any]:
    answer = client.get(f"/api/stories/{story}{query}", headers=auth)
    assert answer.status_code == 200, answer.text
    return answer.json()


def numbers(body: dict[str, Any]) -> list[int]:
    return [round_["number"] for round_ in body["rounds"]]


def roll_rounds(body: dict[str, Any]) -> list[int]:
    return [roll["round"] for roll in body["integrity"]["rolls"]]


def test_a_story_of_more_rounds_than_the_limit_answers_a_bounded_page(store: Store, worlds: Path) -> None:
    script = [reply(f"Round {number} is told.") for number in range(1, ROUNDS + 1)]
    with served_app(store, worlds, script, faces=list(range(1, ROUNDS + 1))) as (client, _):
        story, auth = played(client, ROUNDS)

        newest = page(client, story, auth, "?limit=2")
        assert numbers(newest) == [4, 5]
        assert newest["page"] == {
            "rounds": 5,
            "after": 3,
            "limit": 2,
            "first": 4,
            "last": 5,
            "earlier": True,
            "later": False,
            "whole": False,
        }
        assert roll_rounds(newest) == [4, 5]  # the chain's links of the page's rounds only
        assert newest["story"]["rounds"] == 5

        first = page(client, story, auth, "?after=0&limit=2")
        assert numbers(first) == [1, 2] and roll_rounds(first) == [1, 2]
        assert (first["page"]["earlier"], first["page"]["later"]) == (False, True)

        middle = page(client, story, auth, "?after=2&limit=2")
        assert numbers(middle) == [3, 4] and (middle["page"]["earlier"], middle["page"]["later"]) == (True, True)

        past_the_end = page(client, story, auth, "?after=9")
        assert numbers(past_the_end) == [] and past_the_end["page"]["earlier"] and not past_the_end["page"]["later"]

        whole = page(client, story, auth)  # the default page: the newest 200 rounds, here every one
        assert numbers(whole) == [1, 2, 3, 4, 5] and roll_rounds(whole) == [1, 2, 3, 4, 5]
        assert whole["page"] == {
            "rounds": 5,
            "after": 0,
            "limit": 200,
            "first": 1,
            "last": 5,
            "earlier": False,
            "later": False,
            "whole": True,
        }

        audited = client.get(f"/api/stories/{story}/audit", headers=auth).json()  # the audit reads the story whole
        assert audited["ok"], audited


def test_a_story_without_rounds_is_a_whole_page(store: Store, worlds: Path) -> None:
    with served_app(store, worlds, []) as (client, _):
        story, auth = start_story(client)
        body = page(client, story, auth)
        assert body["rounds"] == [] and body["page"]["whole"] and body["page"]["first"] is None


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("?limit=0", "limit"),
        ("?limit=1001", "limit"),
        ("?limit=many", "limit"),
        ("?after=-1", "after"),
        ("?after=x", "after"),
        ("?after=" + "9" * 30, "after"),  # past every database's integers
    ],
)
def test_a_bad_page_is_a_422_with_one_sentence(store: Store, worlds: Path, query: str, named: str) -> None:
    with served_app(store, worlds, []) as (client, _):
        story, auth = start_story(client)
        answer = client.get(f"/api/stories/{story}{query}", headers=auth)
        assert answer.status_code == 422, answer.text
        assert list(answer.json()) == ["error"] and named in answer.json()["error"], answer.json()
