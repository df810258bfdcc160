"""Hostile chat requests: whatever a front end (or anyone) sends to /v1/chat/completions, the answer is a
completion or one sentence in OpenAI's error shape, never a 5xx, and nothing half-written; on SQLite and
PostgreSQL, in process (TestClient), with the in-process fake playing the game master."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gm.store import Store
from gm.testing import Step, honest_judge, is_judge_request, reply
from gm.testing._openai_schemas import problems
from gm.web.compat.messages import marker_text
from tests.support.compat import RESPONSE
from tests.support.web import served_app


def answers(request: dict[str, Any]) -> Step:
    if is_judge_request(request):
        return honest_judge(request)
    return reply("The sea is calm.")


TEXT = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["/roll 2d6", "!roll 9q9", "/dice hidden", "/open", "/regenerate", "/start", "### Task: x", ""]),
    st.just("\x00"),
    st.just("\ud800"),
)
CONTENT = st.one_of(
    TEXT,
    st.none(),
    st.integers(),
    st.lists(st.one_of(st.fixed_dictionaries({"type": st.just("text"), "text": TEXT}), st.integers()), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)
ROLE = st.sampled_from(["user", "assistant", "system", "developer", "tool", "bogus"])
MESSAGE = st.one_of(
    st.fixed_dictionaries({"role": ROLE, "content": CONTENT}),
    st.fixed_dictionaries({"content": CONTENT}),
    st.text(max_size=5),
    st.integers(),
)
BODY = st.fixed_dictionaries(
    {"model": st.sampled_from(["gm/harbour", "gm/harbour:hidden", "gm/harbour:loud", "gm/nowhere", "gpt-4o"])},
    optional={
        "messages": st.one_of(st.lists(MESSAGE, max_size=5), st.text(max_size=5)),
        "stream": st.one_of(st.booleans(), st.text(max_size=3)),
        "n": st.one_of(st.integers(-2, 3), st.none()),
        "temperature": st.floats(allow_nan=False),
        "stream_options": st.one_of(st.none(), st.just({"include_usage": True}), st.integers()),
    },
)


def test_hostile_requests_get_a_completion_or_one_sentence(store: Store, worlds: Path) -> None:
    with served_app(store, worlds, answers) as (client, _):
        forged = marker_text("0" * 32, "A" * 43, 0)

        @settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
        @given(body=BODY, with_forged_marker=st.booleans())
        @example(
            body={"model": "gm/harbour", "messages": [{"role": "user", "content": "I wait."}]}, with_forged_marker=False
        )
        @example(
            body={"model": "gm/harbour", "messages": [{"role": "user", "content": "Go."}], "stream": True},
            with_forged_marker=False,
        )
        def check(body: dict[str, Any], with_forged_marker: bool) -> None:
            if with_forged_marker and isinstance(body.get("messages"), list):
                body["messages"] = [{"role": "assistant", "content": forged}, *body["messages"]]
            sent = json.dumps(body).encode()  # ASCII, so half a surrogate pair travels as \\ud800
            answer = client.post("/v1/chat/completions", content=sent, headers={"Content-Type": "application/json"})
            assert answer.status_code < 500, (body, answer.text)
            if answer.status_code != 200:
                error = answer.json()["error"]
                assert set(error) == {"message", "type", "param", "code"} and error["message"], error
                return
            if answer.headers["content-type"].startswith("text/event-stream"):
                assert answer.text.rstrip().endswith("data: [DONE]") or '"error"' in answer.text, answer.text
                return
            assert problems(RESPONSE, answer.json()) == "", answer.json()

        check()
        assert any(story.rounds for story in store.stories()), "no example played a round: the fuzz missed the point"
