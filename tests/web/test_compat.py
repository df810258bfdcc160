"""gm as an OpenAI-compatible model, driven as a chat front end drives it: the real `openai` client over HTTP
against `gm serve`'s app under uvicorn, the game master a fake model over HTTP, on SQLite and PostgreSQL."""

from __future__ import annotations

import http.client
import json
import re
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import openai
import pytest

from gm.engine.prompt import read_player_turn
from gm.store import Store
from gm.testing import http_error, reply, slow
from gm.testing._openai_schemas import problems
from gm.web.compat.messages import CONNECTED, EDITS_NOTICE, LOST_MARKER, NOTHING_TO_CONTINUE
from tests.support.compat import REQUEST, cards, chat, gm_server, marker_of, retell, streamed
from tests.support.rounds import narrate_roll, roll_mara


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def gm(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def test_models_and_rounds_plain_and_streamed(store: Store, worlds: Path) -> None:
    script = [roll_mara(), narrate_roll("The lock gives with a soft click."), reply("The office is dark.")]
    with gm_server(store, worlds, script, faces=[11]) as served:
        models = served.client().models.list()
        assert [model.id for model in models.data] == ["gm/harbour", "gm/harbour:hidden"]
        history = [{"role": "system", "content": "You are a narrator."}, user("I pick the lock.")]
        first = chat(served, history)
        assert first.startswith("The lock gives with a soft click.")
        [card] = cards(first)
        assert card.startswith("<details>\n<summary>Risky attempt - Mara: Partial success</summary>\n"), card
        assert "1d20 (11) = 11, +3, target 12 -&gt; 2, partial success" in card
        story, _, rounds = marker_of(first)
        assert rounds == 1
        second = streamed(served, [*history, gm(first), user("I slip inside.")])
        assert second.startswith("The office is dark.") and cards(second) == []
        assert marker_of(second)[0] == marker_of(first)[0] and marker_of(second)[2] == 2
        assert [r.player_text for r in store.rounds(story)] == ["I pick the lock.", "I slip inside."]


def chat_id(name: str) -> dict[str, Any]:
    """Open WebUI's headers (ENABLE_FORWARD_USER_INFO_HEADERS) naming a chat."""
    return {"extra_headers": {"X-OpenWebUI-Chat-Id": name, "X-OpenWebUI-User-Id": "u1"}}


def test_two_chats_never_mix_and_a_new_chat_is_a_new_story(store: Store, worlds: Path) -> None:
    script = [reply("A gull screams."), reply("Fog rolls in."), reply("Chat one goes on."), reply("Chat two goes on.")]
    with gm_server(store, worlds, script) as served:
        one = chat(served, [user("I look around.")], **chat_id("c1"))
        two = streamed(served, [user("I look around.")], **chat_id("c2"))  # the same words: a chat of its own
        assert marker_of(one)[0] != marker_of(two)[0]
        chat(served, [user("I look around."), gm(one), user("I wave at the gull.")])
        chat(served, [user("I look around."), gm(two), user("I wait for the fog.")])
        texts = {
            story: [r.player_text for r in store.rounds(story)] for story in (marker_of(one)[0], marker_of(two)[0])
        }
        assert texts[marker_of(one)[0]] == ["I look around.", "I wave at the gull."]
        assert texts[marker_of(two)[0]] == ["I look around.", "I wait for the fog."]


def test_a_lost_or_forged_marker_is_refused_and_nothing_is_attached(store: Store, worlds: Path) -> None:
    script = [reply("Rain on the quay."), reply("A story of its own."), reply("On the quay, still.")]
    with gm_server(store, worlds, script) as served:
        first = chat(served, [user("I wait.")])
        story, seal, _ = marker_of(first)
        assert "[gm-story]" in first and all(len(part) < 40 for part in re.split(r"[-#\s]", first.splitlines()[-1]))
        stripped = first.split("[gm-story]")[0]
        with pytest.raises(openai.BadRequestError) as lost:  # not gm's answer any more, and no marker
            chat(served, [user("I wait."), gm("Sunshine on the quay."), user("I go on.")])
        assert lost.value.body == {
            "message": LOST_MARKER,
            "type": "invalid_request_error",
            "param": None,
            "code": None,
        }
        forged = first.replace(seal, "A" * len(seal))
        with pytest.raises(openai.BadRequestError) as refused:
            chat(served, [user("I wait."), gm(forged), user("I take over.")])
        assert refused.value.body["message"].endswith("opens no story on this server; start a new chat")
        moved = first.replace(f"{story}-1-", f"{story}-0-")  # a seal is for its round count only
        with pytest.raises(openai.BadRequestError):
            chat(served, [user("I wait."), gm(moved), user("I take over.")])
        pasted = chat(served, [user(first), user("I take over.")])  # a marker the player pasted is not gm's answer
        assert pasted.startswith("A story of its own.") and marker_of(pasted)[0] != story
        assert store.story(story).rounds == 1 and [r.player_text for r in store.rounds(story)] == ["I wait."]
        # The marker cut out in an edit box: the history's answer is still the story's, so the story goes on.
        found = chat(served, [user("I wait."), gm(stripped), user("I go on.")])
        assert found.startswith("On the quay, still.") and marker_of(found)[:1] == (story,)
        assert [r.player_text for r in store.rounds(story)] == ["I wait.", "I go on."]


def test_three_swipes_keep_the_dice(store: Store, worlds: Path) -> None:
    tellings = [retell(f"Telling {n}: the lock half gives.") for n in (2, 3, 4)]
    script = [reply("Rain."), roll_mara(), narrate_roll("Telling 1: the lock half gives."), *tellings]
    with gm_server(store, worlds, script, faces=[11]) as served:
        opening = chat(served, [user("I look at the door.")])
        history = [user("I look at the door."), gm(opening), user("I pick the lock.")]
        first = chat(served, history)
        story = marker_of(first)[0]
        answers = [chat(served, history), streamed(served, history), chat(served, history)]  # the swipes
        assert [answer.split(":")[0] for answer in answers] == ["Telling 2", "Telling 3", "Telling 4"]
        assert {tuple(cards(answer)) for answer in [first, *answers]} == {tuple(cards(first))}
        assert len(cards(first)) == 1 and len(store.story_rolls(story)) == 1
        assert store.story(story).rounds == 2 and store.rounds(story)[1].narration.startswith("Telling 4")
        assert all(marker_of(answer)[0] == marker_of(opening)[0] for answer in answers)


def test_start_is_the_worlds_opening_and_starts_no_story(store: Store, worlds: Path) -> None:
    script = [roll_mara(), narrate_roll("Click."), retell("Click, again.")]
    with gm_server(store, worlds, script, faces=[11]) as served:
        opening = chat(served, [user("/start")])
        assert opening.startswith("**The Harbour Job**\n\nSalt-rotten Port Vey") and "You play Mara." in opening
        assert opening.endswith("\n\n[gm-opening]: #gm-opening-harbour")
        assert chat(served, [user("/start")]) == opening  # regenerated: the same, and still no story
        assert store.stories() == [] and served.model.requests == []
        history = [user("/start"), gm(opening), user("I pick the lock.")]
        first, again = chat(served, history), chat(served, history)  # the first answer, and its swipe
        assert again.startswith("Click, again.") and cards(again) == cards(first)
        assert marker_of(again)[0] == marker_of(first)[0] and len(store.stories()) == 1
        assert store.story(marker_of(first)[0]).rounds == 1


def test_a_swipe_of_the_first_answer_keeps_the_story(store: Store, worlds: Path) -> None:
    script = [roll_mara(), narrate_roll("One."), retell("One, again.")]
    script += [roll_mara(), narrate_roll("By id."), retell("By id, again."), reply("Other.")]
    with gm_server(store, worlds, script, faces=[11, 11]) as served:
        card = [{"role": "system", "content": "A card."}, gm("A greeting.")]
        history = [*card, user("I look around.")]  # SillyTavern: no chat id, the card and greeting before it
        first, swiped = chat(served, history), chat(served, history)
        assert swiped.startswith("One, again.") and marker_of(swiped)[0] == marker_of(first)[0]
        by_id = chat(served, [user("I look around.")], **chat_id("c9"))  # Open WebUI's first request...
        swiped_by_id = chat(served, [user("I look around.")], **chat_id("c9"))  # ...and its Try Again
        assert marker_of(by_id)[0] == marker_of(swiped_by_id)[0] != marker_of(first)[0]
        other = chat(served, [*card, user("I look around more.")])  # other words: another chat's story
        assert marker_of(other)[0] not in (marker_of(first)[0], marker_of(by_id)[0])
        story = store.story(marker_of(first)[0])
        assert story.rounds == 1 and len(store.story_rolls(story.id)) == 1 and len(store.stories()) == 3


def test_dice_setting_by_suffix_and_command(store: Store, worlds: Path) -> None:
    script = [roll_mara(), narrate_roll("Click."), roll_mara(), narrate_roll("Clack.")]
    with gm_server(store, worlds, script, faces=[11, 15]) as served:
        first = chat(served, [user("I pick the lock.")], model="gm/harbour:hidden")
        assert cards(first) == [] and "<details" not in first
        history = [user("I pick the lock."), gm(first), user("/dice shown")]
        told = chat(served, history)
        assert told.startswith("Dice are shown from now on.") and marker_of(told)[2] == 1
        second = chat(served, [*history, gm(told), user("I pick the next lock.")])
        assert len(cards(second)) == 1 and store.story(marker_of(first)[0]).settings["dice"] == "shown"


def test_a_players_roll_with_either_prefix_and_bad_notation(store: Store, worlds: Path) -> None:
    with gm_server(store, worlds, [reply("The dice clatter.")], faces=[4, 4]) as served:
        answer = chat(served, [user("!roll 2d6+1 pick the lock")])
        [card] = cards(answer)
        assert "Roll - Mara: 2d6+1 for pick the lock = 9" in card
        assert (
            "Mara rolled 2d6+1 for 'pick the lock': 9 = 4 + 4 + 1"
            in served.model.requests[0]["messages"][-1]["content"]
        )
        for line in ("/roll 2q6 dodge", "!roll 2q6 dodge"):
            with pytest.raises(openai.BadRequestError) as bad:
                chat(served, [user(line)])
            assert bad.value.body["message"] == "2q6: unexpected 'q' at column 2, expected 'd', '+', '-' or the end"
        assert len(store.stories()) == 1  # bad notation started no story


def test_errors_in_openais_shape(store: Store, worlds: Path) -> None:
    script = [http_error(400, "The model does not exist.")]
    with gm_server(store, worlds, script, api_token="sesame") as served:
        with pytest.raises(openai.AuthenticationError) as unauthorized:
            served.client("wrong").models.list()
        assert unauthorized.value.body["type"] == "authentication_error"  # type: ignore[index]
        client = served.client("sesame")
        with pytest.raises(openai.NotFoundError) as unknown:
            client.chat.completions.create(model="gm/atlantis", messages=[user("Hi")])  # type: ignore[list-item]
        hello = client.chat.completions.create(model="gm/harbour", messages=[user("Hi")])  # type: ignore[list-item]
        assert hello.choices[0].message.content == CONNECTED and store.stories() == []  # SillyTavern's Test Message
        assert unknown.value.body["message"] == "there is no model 'gm/atlantis'; GET /v1/models lists gm's models"
        with pytest.raises(openai.BadRequestError) as many:
            client.chat.completions.create(model="gm/harbour", messages=[user("Hi")], n=2)  # type: ignore[list-item]
        assert many.value.body["message"] == "gm answers one choice per request; set n to 1"
        with pytest.raises(openai.InternalServerError) as failed:  # the game master's model refused gm: a 502
            client.chat.completions.create(model="gm/harbour", messages=[user("I wait.")])  # type: ignore[list-item]
        assert failed.value.status_code == 502 and failed.value.body["type"] == "server_error"  # type: ignore[index]
        assert store.stories() == []  # the first round failed: no story is left behind
        status, body = raw(served.url, "GET", "/v1/models", headers={"Host": "evil.example"})
        assert status == 400 and body["error"]["type"] == "invalid_request_error"
        status, body = raw(served.url, "GET", "/v1/embeddings", headers={"Authorization": "Bearer sesame"})
        assert status == 404 and body["error"]["message"] == "there is no /v1/embeddings"
        json_headers = {"Content-Type": "application/json", "Authorization": "Bearer sesame"}
        status, body = raw(served.url, "POST", "/v1/chat/completions", b"{", json_headers)
        assert status == 422 and body["error"]["message"].startswith("the request body is not valid JSON")
        status, body = raw(
            served.url, "POST", "/v1/chat/completions", b"x" * (9 << 20), {"Authorization": "Bearer sesame"}
        )
        assert status == 413 and body["error"]["code"] == "request_too_large"


def raw(url: str, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None) -> Any:
    """A request as no well-behaved client sends it: its status and JSON answer."""
    connection = http.client.HTTPConnection(url.removeprefix("http://"), timeout=30)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        answer = connection.getresponse()
        return answer.status, json.loads(answer.read())
    finally:
        connection.close()


# A request shaped as SillyTavern's Chat Completion source "Custom (OpenAI-compatible)" sends it: the main
# prompt, the character card and scenario as system messages, example dialogue as named system messages,
# the chat, a post-history instruction after the player's message, and its sampler settings.
SILLYTAVERN: dict[str, Any] = {
    "messages": [
        {"role": "system", "content": "Write {{char}}'s next reply in a fictional chat between {{char}} and {{user}}."},
        {"role": "system", "content": "[Harbour Master's personality: dry, watchful, fond of ledgers]"},
        {"role": "system", "content": "[Scenario: Port Vey, a night of rain]"},
        {"role": "system", "name": "example_user", "content": "Who goes there?"},
        {"role": "system", "name": "example_assistant", "content": "Only the tide, friend."},
        {"role": "system", "content": "[Start a new Chat]"},
        {"role": "assistant", "content": "Rain drums on the harbour office roof."},  # the card's first message
        {"role": "user", "content": "I knock on the office door."},
        {"role": "system", "content": "[System note: keep replies under 300 words.]"},
    ],
    "temperature": 1,
    "frequency_penalty": 0,
    "presence_penalty": 0,
    "top_p": 1,
    "max_tokens": 300,
    "stream": False,
    "logit_bias": {},
    "seed": -1 + 2,
    "n": 1,
}
SILLYTAVERN_EXTRA = {"top_k": 0, "min_p": 0, "repetition_penalty": 1, "stop": ["\nYou:"], "include_reasoning": False}

# Open WebUI's shape: its system prompt, the chat, stream with usage, its own fields beside OpenAI's.
OPEN_WEBUI: dict[str, Any] = {
    "messages": [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": [{"type": "text", "text": "I knock on the office door."}]},
    ],
    "stream": True,
    "stream_options": {"include_usage": True},
    "temperature": 0.8,
}
OPEN_WEBUI_EXTRA = {"num_ctx": 2048, "keep_alive": "5m"}


@pytest.mark.parametrize(("shape", "extra"), [(SILLYTAVERN, SILLYTAVERN_EXTRA), (OPEN_WEBUI, OPEN_WEBUI_EXTRA)])
def test_front_end_requests_are_played(
    store: Store, worlds: Path, shape: dict[str, Any], extra: dict[str, Any]
) -> None:
    assert problems(REQUEST, {"model": "gm/harbour", **shape}) == ""  # the fixture itself is an OpenAI request
    with gm_server(store, worlds, [reply("The door creaks open.")]) as served:
        ask = streamed if shape["stream"] else chat
        options = {key: value for key, value in shape.items() if key not in ("messages", "stream")}
        answer = ask(served, shape["messages"], extra_body=extra, **options)
        assert answer.startswith("The door creaks open.")
        sent = served.model.requests[0]["messages"]
        assert sent[0]["content"].startswith("You are the game master")  # the world's instructions lead
        player = sent[-1]["content"]
        assert player.startswith("I knock on the office door.\n\n(Fact: the player's chat app sent these notes")
        assert read_player_turn(player).notes and not read_player_turn(player).facts  # notes, not a roll
        assert shape["messages"][0]["content"] in player
        assert "Rain drums" not in player  # the card's greeting is not the player's


def test_notes_are_bounded(store: Store, worlds: Path) -> None:
    card = "A very long card. " * 2000
    with gm_server(store, worlds, [reply("Fine.")]) as served:
        chat(served, [{"role": "system", "content": card}, user("Hello.")])
        player = served.model.requests[0]["messages"][-1]["content"]
        assert 4000 < len(player) < 4500


def test_open_webui_background_tasks_play_nothing(store: Store, worlds: Path) -> None:
    task = "### Task:\nGenerate a concise, 3-5 word title.\n<chat_history>\nUSER: hi\n</chat_history>"
    with gm_server(store, worlds, []) as served:
        answer = chat(served, [user(task)])
        assert answer == '{"title": "The Harbour Job", "tags": [], "follow_ups": [], "queries": []}'
        assert store.stories() == [] and served.model.requests == []


def test_edits_are_noticed_once_and_the_story_plays_on(store: Store, worlds: Path) -> None:
    script = [reply("One."), reply("Two."), reply("Three."), reply("Four."), reply("Five.")]
    with gm_server(store, worlds, script) as served:
        first = chat(served, [user("a")])
        second = chat(served, [user("a"), gm(first), user("b")])
        edited = [user("a, edited"), gm(first), user("b"), gm(second)]
        third = chat(served, [*edited, user("c")])
        assert third.startswith(EDITS_NOTICE.format(rounds=3) + "\n\nThree.")
        fourth = chat(served, [*edited, user("c"), gm(third), user("d")])
        assert fourth.startswith("Four.")
        # gm's answer to "d" deleted, and something else said instead: not a swipe, and noticed once
        fifth = chat(served, [*edited, user("c"), gm(third), user("e")])
        assert fifth.startswith(EDITS_NOTICE.format(rounds=5) + "\n\nFive.")
        story = marker_of(first)[0]
        assert [r.player_text for r in store.rounds(story)] == ["a", "b", "c", "d", "e"]


@pytest.mark.slow
def test_a_chat_goes_on_after_a_restart(store: Store, worlds: Path) -> None:
    with gm_server(store, worlds, [reply("Before.")]) as served:
        first = chat(served, [user("a")])
    with gm_server(store, worlds, [reply("After.")]) as served:  # a new process on the same database
        second = chat(served, [user("a"), gm(first), user("b")])
    assert second.startswith("After.") and marker_of(second)[0] == marker_of(first)[0]


@pytest.mark.slow
def test_a_busy_story_and_a_round_failing_mid_stream(store: Store, worlds: Path) -> None:
    script = [reply("Rain."), slow(reply("Slowly, the fog."), 3.0), http_error(400, "The model does not exist.")]
    with gm_server(store, worlds, script) as served:
        opening = chat(served, [user("I wait.")])
        history = [user("I wait."), gm(opening), user("I wait longer.")]
        with ThreadPoolExecutor(1) as pool:
            slow_round = pool.submit(chat, served, history)
            time.sleep(0.5)
            with pytest.raises(openai.ConflictError) as busy:
                chat(served, [*history[:2], user("I shout.")])
            assert busy.value.body["type"] == "invalid_request_error"  # type: ignore[index]
            answer = slow_round.result()
        assert answer.startswith("Slowly, the fog.")
        with pytest.raises(openai.APIError) as failed:  # the stream has begun: the error comes as OpenAI's event
            streamed(served, [*history, gm(answer), user("I run.")])
        assert "model" in failed.value.message
        assert store.story(marker_of(opening)[0]).rounds == 2


def test_chat_commands_and_a_continue(store: Store, worlds: Path) -> None:
    script = [roll_mara(), narrate_roll("Click."), retell("Click, told again.")]
    with gm_server(store, worlds, script, faces=[11]) as served:
        first = chat(served, [user("I pick the lock.")])
        history = [user("I pick the lock."), gm(first)]
        helped = chat(served, [*history, user("/help")])
        assert "!roll" in helped and "/start" in helped and marker_of(helped)[2] == 1
        shown = chat(served, [*history, user("/open")])
        assert shown.startswith("<details open>\n<summary>Risky attempt - Mara: Partial success</summary>\n")
        again = streamed(served, [*history, user("/regenerate")])
        assert again.startswith("Click, told again.") and cards(again) == cards(first)
        with pytest.raises(openai.BadRequestError) as continued:  # SillyTavern's Continue: gm's answer is last
            chat(served, [*history, {"role": "system", "content": "[Continue your last message]"}])
        assert continued.value.body["message"] == NOTHING_TO_CONTINUE  # type: ignore[index]
        with pytest.raises(openai.BadRequestError) as unknown:
            chat(served, [*history, user("/fly")])
        assert unknown.value.body["message"] == "there is no command /fly; type /help for the commands"  # type: ignore[index]
        assert store.story(marker_of(first)[0]).rounds == 1


@pytest.mark.parametrize(
    ("messages", "message"),
    [
        ([], "messages is empty; send the chat's history ending with the player's message"),
        (
            [{"role": "system", "content": "Be kind."}],
            "the chat has no user message; gm plays a round on the player's last message",
        ),
        (["hello"], "messages[0] must be an object with a role"),
        ([{"role": "user", "content": {"text": "hi"}}], "a message's content must be text or a list of content parts"),
        ([{"role": "user", "content": "   "}], "the player's message is empty"),
    ],
)
def test_requests_gm_cannot_read_are_one_sentence(
    store: Store, worlds: Path, messages: list[Any], message: str
) -> None:
    with gm_server(store, worlds, []) as served:
        status, body = raw(
            served.url,
            "POST",
            "/v1/chat/completions",
            json.dumps({"model": "gm/harbour", "messages": messages}).encode(),
            {"Content-Type": "application/json"},
        )
        assert (status, body["error"]["message"], body["error"]["type"]) == (400, message, "invalid_request_error")
        assert store.stories() == []


def test_a_task_of_a_chat_that_switched_worlds_keeps_its_storys_title(store: Store, worlds: Path) -> None:
    """Open WebUI asks the chat's model for the title: after the player picked another world's model, the task
    still quotes the chat, whose marker names its story, whose title it gets (not the new world's)."""
    other = worlds / "other"
    shutil.copytree(worlds / "harbour", other)
    data = json.loads((other / "world.json").read_text())
    (other / "world.json").write_text(json.dumps({**data, "title": "Another World"}))
    with gm_server(store, worlds, [reply("Rain.")]) as served:
        first = chat(served, [user("I wait.")])
        task = f"### Task:\nGenerate a concise, 3-5 word title.\n<chat_history>\nUSER: I wait.\nASSISTANT: {first}\n"
        answer = chat(served, [user(task + "</chat_history>")], model="gm/other")
        assert json.loads(answer)["title"] == "The Harbour Job"
        forged = task.replace(marker_of(first)[1], "B" * 16)
        assert json.loads(chat(served, [user(forged)], model="gm/other"))["title"] == "Another World"
