"""The operator's side of `gm serve` (issue 40): /healthz, /readyz, /metrics, the drain's 503, JSON logs.

The app is wrapped as `gm serve` wraps it (gm.web._health.Operations); the model is gm.testing's fake over
HTTP, reached by gm's own client, so the metrics count real model calls.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import create_engine, text

from gm import dice
from gm.config import Settings
from gm.engine._in_flight import CLOSED, ROUND
from gm.engine.game import Game
from gm.engine.observe import observe
from gm.models.client import ModelClient, ModelSettings
from gm.store import Store
from gm.testing import FakeModel, honest_judge, is_judge_request, reply
from gm.web._health import RETRY_AFTER_SECONDS, Operations
from gm.web._logs import HIDDEN, Hider, JsonLines, TextLines, secrets_of
from gm.web._metrics import Metrics
from gm.web.app import create_app
from tests.support.rounds import fake, narrate_roll, roll_mara

TOKEN = "metrics-token-for-tests"


@contextmanager
def operated(
    store: Store, worlds: Path, script: Any = None, **options: Any
) -> Iterator[tuple[TestClient, Game, FakeModel]]:
    model = fake(script or (lambda request: reply("The harbour is quiet."))).start()
    metrics = Metrics()
    observe(metrics)
    try:
        game = Game(
            ModelClient(ModelSettings(model.base_url, "k", model.model)), store, source=dice.GivenFaces([6, 6] * 10)
        )
        metrics.time_database(store)
        app = create_app(game, worlds, editor=False)
        wrapped = Operations(app, game, drain_seconds=1.0, metrics=metrics, metrics_token=TOKEN, **options)
        with TestClient(wrapped, base_url="http://127.0.0.1") as client:
            yield client, game, model
    finally:
        observe(None)
        model.close()


def start(client: TestClient) -> tuple[str, dict[str, str]]:
    made = client.post("/api/stories", json={"world": "harbour"})
    assert made.status_code == 201, made.text
    return made.json()["story"]["id"], {"Authorization": f"Bearer {made.json()['token']}"}


def samples(client: TestClient) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    answer = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(answer.text)
        for sample in family.samples
    }


def test_healthz_answers_without_the_database_and_readyz_says_why_it_is_not_ready(store: Store, worlds: Path) -> None:
    with operated(store, worlds) as (client, game, _):
        assert client.get("/healthz").json() == {"status": "alive"}
        assert client.get("/readyz").json() == {"status": "ready"}

        with store.engine.begin() as connection:  # a database whose schema is behind gm's migrations
            connection.execute(text("UPDATE alembic_version SET version_num = 'initial'"))
        answer = client.get("/readyz")
        assert answer.status_code == 503
        assert answer.json()["error"].startswith("the database's schema is at initial, not at the newest (")

        reachable = store.engine
        store.engine = create_engine("sqlite:////nonexistent-folder/gm.db")  # a database that cannot be opened
        try:
            assert client.get("/healthz").status_code == 200  # alive all the same: it reads no database
            answer = client.get("/readyz")
            assert answer.status_code == 503
            assert answer.json() == {"status": "unready", "error": "the database cannot be reached (OperationalError)"}
        finally:
            store.engine = reachable
            with store.engine.begin() as connection:
                connection.execute(text("UPDATE alembic_version SET version_num = :head"), {"head": _head()})

        game.rounds.closed = True  # draining
        answer = client.get("/readyz")
        assert answer.status_code == 503 and answer.json()["error"] == "this server is shutting down"


def _head() -> str:
    from gm.web._health import _heads

    [head] = _heads()
    return head


def test_metrics_need_the_token_and_count_rounds_refusals_model_calls_verdicts_and_database_time(
    store: Store, worlds: Path
) -> None:
    def flipped(outcomes: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{**o, "result": "failed" if o["result"] != "failed" else "succeeded"} for o in outcomes]

    steps = [roll_mara(), narrate_roll(change=flipped), narrate_roll()]  # the referee refuses the wrong result once

    def script(request: dict[str, Any]) -> Any:
        if is_judge_request(request):
            return honest_judge(request)
        if "tools" not in request:
            return reply("Mara tried the lock.")
        return steps.pop(0)(request) if callable(steps[0]) else steps.pop(0)

    with operated(store, worlds, script) as (client, _, _):
        assert client.get("/metrics").status_code == 401
        wrong = client.get("/metrics", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401 and wrong.json() == {
            "error": "/metrics needs Authorization: Bearer <GM_METRICS_TOKEN>"
        }
        story, headers = start(client)
        played = client.post(f"/api/stories/{story}/messages", json={"text": "I pick the lock."}, headers=headers)
        assert played.status_code == 200, played.text
        found = samples(client)

    assert found[("gm_rounds_total", (("outcome", "accepted"),))] == 1
    assert found[("gm_refusals_total", (("kind", "referee"),))] == 1
    assert found[("gm_model_call_seconds_count", (("kind", "game_master"),))] == 3
    assert found[("gm_model_call_seconds_count", (("kind", "judge"),))] == 1
    assert found[("gm_model_tokens_total", (("direction", "prompt"), ("kind", "game_master")))] > 0
    verdicts = {labels: value for (name, labels), value in found.items() if name == "gm_judge_verdicts_total"}
    assert list(verdicts.values()) == [1] and dict(next(iter(verdicts)))["agrees"] == "true"
    assert found[("gm_leases_held", ())] == 0  # taken and let go
    assert found[("gm_database_seconds_count", ())] >= 3  # the attempt opened, the roll, the round accepted


def test_metrics_are_off_without_a_token(store: Store, worlds: Path) -> None:
    with _untokened(store, worlds) as client:
        answer = client.get("/metrics")
    assert answer.status_code == 404
    assert answer.json() == {"error": "there is no /metrics: set GM_METRICS_TOKEN to serve them"}


@contextmanager
def _untokened(store: Store, worlds: Path) -> Iterator[TestClient]:
    game = Game(ModelClient(ModelSettings("http://127.0.0.1:9/v1", "k", "m")), store)
    app = Operations(create_app(game, worlds, editor=False), game, drain_seconds=1, metrics=None, metrics_token=None)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        yield client


def test_a_failed_round_is_counted_by_its_error(store: Store, worlds: Path) -> None:
    with operated(store, worlds, lambda request: reply("cut", finish_reason="length")) as (client, _, _):
        story, headers = start(client)
        failed = client.post(f"/api/stories/{story}/messages", json={"text": "I wait."}, headers=headers)
        assert failed.status_code == 502
        found = samples(client)
    assert found[("gm_rounds_total", (("outcome", "failed"),))] == 1
    assert found[("gm_round_failures_total", (("error", "RoundFailed"),))] == 1


@pytest.mark.parametrize(
    "path", ["/api/stories/{story}/messages", "/api/stories/{story}/messages/stream", "/api/stories/{story}/regenerate"]
)
def test_while_draining_a_new_round_is_503_with_one_sentence_and_retry_after(
    store: Store, worlds: Path, path: str
) -> None:
    with operated(store, worlds) as (client, game, _):
        story, headers = start(client)
        game.rounds.closed = True
        answer = client.post(path.format(story=story), json={"text": "I wait."}, headers=headers)
        assert client.get(f"/api/stories/{story}", headers=headers).status_code == 200  # reading goes on
    assert answer.status_code == 503
    assert answer.json() == {"error": CLOSED}
    assert answer.headers["retry-after"] == str(RETRY_AFTER_SECONDS)


def test_while_draining_the_chat_endpoint_answers_503_in_openais_shape(store: Store, worlds: Path) -> None:
    with operated(store, worlds) as (client, game, _):
        game.rounds.closed = True
        answer = client.post("/v1/chat/completions", json={"model": "harbour", "messages": []})
    assert answer.status_code == 503
    assert answer.json()["error"]["message"] == CLOSED


def record(message: str, *args: Any, **extra: Any) -> logging.LogRecord:
    made = logging.LogRecord("gm.test", logging.WARNING, __file__, 1, message, args, None)
    for name, value in extra.items():
        setattr(made, name, value)
    return made


def test_a_json_log_line_is_one_object_with_the_story_and_round_and_never_a_secret() -> None:
    settings = Settings(
        api_token="api-secret-1", editor_token="editor-secret", metrics_token="m-secret", api_key="sk-1"
    )
    hide = Hider(secrets_of(settings))
    lines = JsonLines(hide)
    where = ROUND.set({"story": "s-1", "round": 4})
    try:
        line = lines.format(
            record("token %s refused; header Bearer abc.def-ghi", "api-secret-1", drain={"finished": 3, "why": "sk-1"})
        )
    finally:
        ROUND.reset(where)
    assert "\n" not in line
    parsed = json.loads(line)
    assert parsed["story"] == "s-1" and parsed["round"] == 4 and parsed["level"] == "warning"
    assert parsed["message"] == f"token {HIDDEN} refused; header Bearer {HIDDEN}"
    assert parsed["drain"] == {"finished": 3, "why": HIDDEN}
    for secret in ("api-secret-1", "editor-secret", "m-secret", "sk-1", "abc.def-ghi"):
        assert secret not in line
    outside = json.loads(lines.format(record("no round here")))
    assert "story" not in outside and "round" not in outside


def test_a_text_log_line_hides_secrets_too() -> None:
    hide = Hider(secrets_of(Settings(api_token="api-secret-1")))
    line = TextLines(hide).format(record("the token is api-secret-1"))
    assert "api-secret-1" not in line and line.endswith(f"gm.test: the token is {HIDDEN}")


@pytest.mark.subprocess
@pytest.mark.parametrize(
    ("arguments", "env", "said"),
    [
        ([], {"GM_DRAIN_SECONDS": "-1"}, "error: GM_DRAIN_SECONDS must be 0 or more seconds, not -1"),
        ([], {"GM_LOG_FORMAT": "xml"}, "error: GM_LOG_FORMAT must be text or json, not 'xml'"),
        (
            ["--log-format", "xml"],
            {},
            "error: argument --log-format: invalid choice: 'xml' (choose from 'text', 'json') (see 'gm serve --help')",
        ),
    ],
)
def test_a_bad_drain_bound_or_log_format_is_one_sentence(arguments: list[str], env: dict[str, str], said: str) -> None:
    from tests.support.command_line import gm
    from tests.support.servers import free_port

    ran = gm("serve", "--model", "rehearsal", "--port", str(free_port()), *arguments, env=env)
    assert (ran.returncode, ran.stdout, ran.stderr) == (2, "", said + "\n")


def test_a_line_logged_in_a_round_carries_its_story_and_round(store: Store, tmp_path: Path) -> None:
    import asyncio
    import io

    from gm.errors import RoundFailed
    from tests.support.rounds import table
    from tests.support.worlds import write_world

    def broken(request: dict[str, Any]) -> Any:
        raise RuntimeError("a bug in the model's adapter")  # unforeseen: logged with its traceback

    written = io.StringIO()
    handler = logging.StreamHandler(written)
    handler.setFormatter(JsonLines(Hider([])))
    logging.getLogger("gm").addHandler(handler)

    async def play() -> str:
        async with table(store, [reply("The harbour is quiet."), broken]) as played:
            story = played.game.start_story(write_world(tmp_path / "w"))
            await played.game.play(story, "I look around.")
            with pytest.raises(RoundFailed):
                await played.game.play(story, "I look again.")
            played.master.failures.clear()  # the bug was the point
            return story

    try:
        story = asyncio.run(play())
    finally:
        logging.getLogger("gm").removeHandler(handler)
    [line] = [json.loads(text) for text in written.getvalue().splitlines() if "failed unforeseen" in text]
    assert (line["story"], line["round"], line["level"]) == (story, 2, "error")
    assert "a bug in the model's adapter" in line["error"]
