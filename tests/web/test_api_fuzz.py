"""A fuzz guard for the story API (issue 10): schemathesis drives every operation of `gm serve`'s OpenAPI
description with generated requests, valid and invalid, on SQLite and on PostgreSQL.

Every response must be no 5xx, have a status the description documents for its operation, and match
the documented content type and schema (the `{"error"}` shape for errors, each server-sent event of a
stream). Most requests carry the token of a real story, so rounds are played (against a fake model
that rolls checks and narrates them); the rest carry another story's token or none. Bounded by
`EXAMPLES` per operation and mode, with a fixed seed, so a run takes a few seconds per database and
finds the same cases every time; `GM_FUZZ_EXAMPLES` raises the bound for a longer hunt.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.generation import GenerationMode
from sqlmodel import select

from gm.store import Attempt, Store
from gm.testing import Request, Step, call, reply
from gm.testing.judging import honest_judge, is_judge_request
from tests.support.rounds import narrate_roll, tool_results
from tests.support.web import served_app

EXAMPLES = int(os.environ.get("GM_FUZZ_EXAMPLES", "15"))
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
WHO = ["owner", "owner", "owner", "owner", "stranger", "nobody"]  # mostly the story's own token
# Player text made a command, or hostile, now and then.
TWISTS = ["", "", "", "/roll ", "/roll 1d6 ", "/", "/dice ", "\x00", "\x1b]0;PWNED\x07", " \t"]


def no_failed_round(ctx: Any, response: Any, case: Any) -> bool | None:
    """With a fake model that never fails, a round that fails (502, or a `failed` event) is the server's bug."""
    text = response.text if hasattr(response, "text") else ""
    if response.status_code == 502 or "event: failed" in text:
        raise AssertionError(f"a round failed although the model behaved: {text[:300]}")
    return None


def game_master(request: Request) -> Step:
    """Roll a check for texts of odd length and narrate it honestly; answer others in plain text.
    The judge reads every narration honestly."""
    if is_judge_request(request):
        return honest_judge(request)
    if "tools" not in request:
        return reply("Something happened at the harbour.")
    last = request["messages"][-1]
    if last["role"] == "tool":
        if any("band" in result for result in tool_results(request)):
            return narrate_roll("The lock gives, or it does not.")(request)
        return reply("The harbour waits.")
    if len(str(last["content"])) % 2:
        return call("roll_check", {"check": "attempt", "character": "Mara", "target": 12, "reason": "the lock"})
    return reply("The harbour answers.")


@dataclass
class Fuzzed:
    """How many cases were sent, by status, across the run."""

    statuses: dict[int, int] = field(default_factory=dict)

    @property
    def cases(self) -> int:
        return sum(self.statuses.values())


@pytest.fixture
def served(store: Store, worlds: Path) -> Iterator[TestClient]:
    with served_app(store, worlds, game_master, faces=None) as (client, _):
        yield client


@pytest.mark.slow
def test_the_api_keeps_to_its_description(served: TestClient, store: Store) -> None:
    client = served
    mine = client.post("/api/stories", json={"world": "harbour"}).json()
    other = client.post("/api/stories", json={"world": "harbour"}).json()
    tokens = {"owner": mine["token"], "stranger": other["token"], "nobody": None}
    schema = schemathesis.openapi.from_dict(client.get("/openapi.json").json())
    fuzzed = Fuzzed()

    for result in schema.get_all_operations():
        operation = result.ok()
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @settings(
                max_examples=EXAMPLES,
                deadline=None,
                database=None,
                derandomize=True,
                suppress_health_check=list(HealthCheck),
            )
            @given(
                case=operation.as_strategy(generation_mode=mode),
                who=st.sampled_from(WHO),
                twist=st.sampled_from(TWISTS),
            )
            def exchange(case: Any, who: str, twist: str) -> None:
                if "story_id" in (case.path_parameters or {}) and who != "nobody":
                    case.path_parameters["story_id"] = mine["story"]["id"]
                if isinstance(case.body, dict) and who == "owner":  # steer valid bodies toward what exists
                    if isinstance(case.body.get("world"), str):
                        case.body["world"] = "harbour"
                    if isinstance(case.body.get("text"), str):
                        case.body["text"] = twist + case.body["text"]
                headers = {key: value for key, value in (case.headers or {}).items() if key.lower() != "authorization"}
                if tokens[who] is not None:
                    headers["Authorization"] = f"Bearer {tokens[who]}"
                case.headers = headers
                sent = case.as_transport_kwargs(base_url="http://127.0.0.1")
                if isinstance(sent.get("data"), bytes | str):  # a raw body, as an invalid case may send
                    sent["content"] = sent.pop("data")
                allowed = ("method", "url", "headers", "params", "json", "content", "data")
                response = client.request(**{key: value for key, value in sent.items() if key in allowed})
                fuzzed.statuses[response.status_code] = fuzzed.statuses.get(response.status_code, 0) + 1
                case.validate_response(response, checks=CHECKS)
                no_failed_round(None, response, case)

            try:
                exchange()
            except Unsatisfiable:  # nothing to get wrong: an operation without parameters or a body
                assert mode is GenerationMode.NEGATIVE and operation.path == "/api/worlds", operation.label

    print(f"\nfuzzed {fuzzed.cases} cases on {store.engine.dialect.name}: {dict(sorted(fuzzed.statuses.items()))}")
    assert fuzzed.cases >= 15 * EXAMPLES // 2  # every operation was reached, most in both modes
    assert {200, 201, 400, 401, 404, 422} <= set(fuzzed.statuses)  # rounds were played, and refusals met
    with store.session() as session:  # nothing the fuzzer did left a round running
        assert [a.status for a in session.exec(select(Attempt)) if a.status == "running"] == []
