"""The shared table over the API (docs/table.md), with a fake game master: seats invited, listed and revoked by
the owner; a free story plays each seat's message as its character; a together story gathers one action a seat
and plays them in one round, closed by the last action, the owner, or the timer; whispers and /v1."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from gm.engine.table import Viewer
from gm.store import Store
from gm.transcript.sheets import ChangePublic, SheetsPublic
from gm.web.api import seat_sheet
from tests.support.table import table_master, table_worlds
from tests.support.web import served_app, start_story


@pytest.fixture
def tables(tmp_path: Path, harbor: Path) -> Path:
    return table_worlds(tmp_path, harbor)


def seat(client: Any, story: str, owner: dict[str, str], character: str) -> tuple[str, dict[str, str]]:
    answer = client.post(
        f"/api/stories/{story}/seats", json={"character": character, "name": "a friend"}, headers=owner
    )
    assert answer.status_code == 201, answer.text
    body = answer.json()
    assert body["invite"] == f"/play/{story}#token={body['token']}"
    return body["seat"]["id"], {"Authorization": f"Bearer {body['token']}"}


def test_the_owner_invites_lists_and_revokes_seats(store: Store, tables: Path) -> None:
    with served_app(store, tables, table_master) as (client, _):
        story, owner = start_story(client, "table")
        mara_id, mara = seat(client, story, owner, "Mara")
        again = client.post(f"/api/stories/{story}/seats", json={"character": "Mara"}, headers=owner)
        assert again.status_code == 409 and "Mara already has a seat" in again.json()["error"]
        npc = client.post(f"/api/stories/{story}/seats", json={"character": "Jon"}, headers=owner)
        assert npc.status_code == 400 and npc.json()["error"].startswith("'Jon' is not a player character")
        assert client.post(f"/api/stories/{story}/seats", json={"character": "Odile"}, headers=mara).status_code == 403
        assert client.get(f"/api/stories/{story}/seat", headers=mara).json()["character"] == "Mara"
        assert client.get(f"/api/stories/{story}/seat", headers=owner).status_code == 409
        listed = client.get(f"/api/stories/{story}/seats", headers=owner).json()
        assert [(s["id"], s["character"], s["revoked_at"]) for s in listed] == [(mara_id, "Mara", None)]
        assert "token" not in str(listed)
        view = client.get(f"/api/stories/{story}", headers=mara).json()
        assert view["story"]["table"] == {"seats": ["Mara"], "seat": mara_id, "character": "Mara"}
        assert (
            client.put(f"/api/stories/{story}/seat", json={"dice": "hidden"}, headers=mara).json()["dice"] == "hidden"
        )
        assert client.get(f"/api/stories/{story}", headers=mara).json()["story"]["settings"]["dice"] == "hidden"
        assert client.get(f"/api/stories/{story}", headers=owner).json()["story"]["settings"]["dice"] == "shown"
        assert client.delete(f"/api/stories/{story}/seats/{mara_id}", headers=owner).status_code == 204
        assert client.get(f"/api/stories/{story}", headers=mara).status_code == 404  # revoked: a wrong token now
        assert client.post(f"/api/stories/{story}/messages", json={"text": "hi"}, headers=mara).status_code == 404


def test_a_free_story_plays_each_seat_s_message_as_its_character(store: Store, tables: Path) -> None:
    with served_app(store, tables, table_master) as (client, _):
        story, owner = start_story(client, "table")
        _, mara = seat(client, story, owner, "Mara")
        _, odile = seat(client, story, owner, "Odile")
        played = client.post(f"/api/stories/{story}/messages", json={"text": "/roll 2d6 the crate"}, headers=odile)
        assert played.status_code == 200, played.text
        round_ = played.json()["round"]
        assert round_["player_text"] == "Odile: /roll 2d6 the crate"
        assert [(r["kind"], r["character"]) for r in round_["rolls"]] == [("player", "Odile")]
        assert round_["actions"][0]["character"] == "Odile"
        second = client.post(f"/api/stories/{story}/messages", json={"text": "I follow."}, headers=mara).json()
        assert second["round"]["player_text"] == "Mara: I follow."
        regenerate = client.post(f"/api/stories/{story}/messages", json={"text": "/regenerate"}, headers=mara)
        assert regenerate.status_code == 403
        audit = client.get(f"/api/stories/{story}/audit", headers=mara).json()
        assert audit["ok"] is True, audit
        transcript = client.get(f"/api/stories/{story}", headers=owner).json()
        assert [m["character"] for m in transcript["integrity"]["messages"]] == ["Odile", "Mara"]
        assert [m["round"] for m in transcript["integrity"]["messages"]] == [1, 2]


def test_a_together_round_gathers_one_action_a_seat_and_whispers_to_one(store: Store, tables: Path) -> None:
    with served_app(store, tables, table_master) as (client, _):
        story, owner = start_story(client, "table")
        _, mara = seat(client, story, owner, "Mara")
        _, odile = seat(client, story, owner, "Odile")
        assert (
            client.put(f"/api/stories/{story}/settings", json={"rounds": "together"}, headers=mara).status_code == 403
        )
        settings = client.put(f"/api/stories/{story}/settings", json={"rounds": "together"}, headers=owner).json()
        assert settings["settings"]["rounds"] == "together"
        first = client.post(f"/api/stories/{story}/messages", json={"text": "I pick the lock."}, headers=mara).json()
        assert first == {
            "round": None,
            "asking": None,
            "gathering": {"mode": "together", "acted": ["Mara"], "waiting_for": ["Odile"], "deadline": None},
        }
        flood = client.post(f"/api/stories/{story}/messages", json={"text": "And again!"}, headers=mara)
        assert flood.status_code == 409 and "already acted" in flood.json()["error"]
        assert client.post(f"/api/stories/{story}/round/close", headers=mara).status_code == 403
        assert client.get(f"/api/stories/{story}/round", headers=odile).json()["waiting_for"] == ["Odile"]
        text = {"text": "I keep watch; whisper to Odile: WATCHWORD"}
        last = client.post(f"/api/stories/{story}/messages", json=text, headers=odile).json()
        assert last["round"]["player_text"].splitlines() == ["Mara: I pick the lock.", f"Odile: {text['text']}"]
        assert last["round"]["whispers"] == [{"character": "Odile", "text": "DROWHCTAW"}]
        for_mara = client.get(f"/api/stories/{story}", headers=mara).json()["rounds"][0]
        assert for_mara["whispers"] == [{"character": "Odile", "text": None}]
        assert "DROWHCTAW" not in str(for_mara)
        # The owner closes a round at any time.
        client.post(f"/api/stories/{story}/messages", json={"text": "I run."}, headers=mara)
        closed = client.post(f"/api/stories/{story}/round/close", headers=owner).json()
        assert closed["round"]["player_text"] == "Mara: I run."
        assert client.post(f"/api/stories/{story}/round/close", headers=owner).status_code == 409


@pytest.mark.slow
def test_a_together_round_closes_when_its_timer_runs_out(store: Store, tables: Path) -> None:
    with served_app(store, tables, table_master) as (client, _):
        story, owner = start_story(client, "table")
        _, mara = seat(client, story, owner, "Mara")
        seat(client, story, owner, "Odile")
        client.put(f"/api/stories/{story}/settings", json={"rounds": "together", "round_timer": 1}, headers=owner)
        gathering = client.post(f"/api/stories/{story}/messages", json={"text": "I wait."}, headers=mara).json()
        assert gathering["gathering"]["deadline"] is not None
        for _ in range(100):  # the server closes it by itself once the second has passed
            if client.get(f"/api/stories/{story}", headers=owner).json()["story"]["rounds"] == 1:
                break
            time.sleep(0.05)
        assert client.get(f"/api/stories/{story}", headers=owner).json()["rounds"][0]["player_text"] == "Mara: I wait."


def test_a_chat_front_end_joins_a_seat_with_its_token_as_the_api_key(store: Store, tables: Path) -> None:
    with served_app(store, tables, table_master) as (client, _):
        story, owner = start_story(client, "table")
        _, odile = seat(client, story, owner, "Odile")
        body = {"model": "gm/table", "messages": [{"role": "user", "content": "I look; whisper to Odile: GULLS"}]}
        answer = client.post("/v1/chat/completions", json=body, headers=odile)
        assert answer.status_code == 200, answer.text
        text = answer.json()["choices"][0]["message"]["content"]
        assert text.startswith("The harbour answers them.") and "(Whispered to Odile: SLLUG)" in text
        streamed = client.post("/v1/chat/completions", json={**body, "stream": True}, headers=odile)
        assert "The harbour answers them." in streamed.text and streamed.text.endswith("data: [DONE]\n\n")
        rounds = client.get(f"/api/stories/{story}", headers=owner).json()["rounds"]
        assert [r["actions"][0]["character"] for r in rounds] == ["Odile", "Odile"]


def test_the_audit_sees_a_message_given_to_another_seat(store: Store, tables: Path) -> None:
    """Who sent each message is chained: a message moved to another seat's name breaks the audit."""
    from sqlalchemy import text as sql

    from gm.engine.transcript import transcript
    from gm.integrity.audit import audit

    with served_app(store, tables, table_master) as (client, _):
        story, owner = start_story(client, "table")
        _, mara = seat(client, story, owner, "Mara")
        seat(client, story, owner, "Odile")
        client.post(f"/api/stories/{story}/messages", json={"text": "I climb."}, headers=mara)
    assert audit(transcript(store, story)).ok
    with store.engine.begin() as connection:
        connection.execute(sql("UPDATE table_messages SET character = 'Odile' WHERE story_id = :s"), {"s": story})
    report = audit(transcript(store, story))
    assert not report.ok
    assert [m.where for m in report.mismatches] == ["message 1", "round 1"]


def test_a_seat_reads_its_own_character_s_sheet_only(store: Store, tables: Path) -> None:
    with served_app(store, tables, table_master) as (client, _):
        story, owner = start_story(client, "table")
        _, mara = seat(client, story, owner, "Mara")
        answer = client.get(f"/api/stories/{story}/sheet", headers=mara)  # the play page reads it for every seat
        assert answer.status_code == 200, answer.text
        assert answer.json()["sheet"] is None  # the table world's variables are fixed
    sheets = SheetsPublic(
        story="s",
        sheet={"Mara": {"hp": {"value": 3}}, "Odile": {"hp": {"value": 7}}, "Jon": {"hp": {"value": 1}}},
        shown={"Mara": {"hp": "3"}, "Odile": {"hp": "7"}, "Jon": {"hp": "1"}},
        changes=[change("Mara"), change("Odile"), change("Jon")],
    )
    mine = seat_sheet(sheets, Viewer(seat="a", character="Mara", seated=frozenset({"Mara", "Odile"})))
    assert (list(mine.sheet or {}), list(mine.shown), [c.character for c in mine.changes]) == (
        ["Mara"],
        ["Mara"],
        ["Mara"],
    )


def change(character: str) -> ChangePublic:
    return ChangePublic(
        seq=1, round=1, attempt="a", character=character, variable="hp", action="add", amount=-1, prev_hash="0"
    )
