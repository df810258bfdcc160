"""The pure half of the chat endpoint (gm.web.compat.messages): model names, markers, player text, answers."""

from __future__ import annotations

import pytest

from gm.errors import NotFound
from gm.transcript.shapes import RollPublic
from gm.web.compat.messages import (
    MARKER,
    ModelName,
    answer_text,
    dice_card,
    is_connection_check,
    marker_text,
    opening_marker,
    parse_model,
    player_command_text,
    read_request,
    same_text,
    seal,
)


def test_model_names() -> None:
    assert parse_model("gm/harbour-heist") == ModelName("harbour-heist", None)
    assert parse_model("gm/harbour-heist:hidden") == ModelName("harbour-heist", "hidden")
    for name, message in [
        ("gpt-4o", "there is no model 'gpt-4o'; gm's models are named gm/<world>, see GET /v1/models"),
        ("gm/x:loud", "the model 'gm/x:loud' has an unknown suffix; use :shown or :hidden for the Dice setting"),
    ]:
        with pytest.raises(NotFound) as caught:
            parse_model(name)
        assert str(caught.value) == message


def test_bang_roll_is_slash_roll_and_only_that() -> None:
    assert player_command_text("  !roll 2d6+1 pick the lock ") == "/roll 2d6+1 pick the lock"
    assert player_command_text("!ROLL d20") == "/roll d20"
    assert player_command_text("!rolling thunder") == "!rolling thunder"
    assert same_text("!roll 2d6  pick", "/roll 2d6 pick") and not same_text("I wait.", "I wait!")


def roll(**fields: object) -> RollPublic:
    base: dict[str, object] = {
        "id": 1,
        "kind": "dice",
        "notation": "1d6",
        "faces": [[4]],
        "total": 4,
        "dice": "1d6 (4) = 4",
    }
    return RollPublic.model_validate({**base, **fields})


def test_cards_and_narration_escape_what_a_model_wrote() -> None:
    hostile = roll(reason="<img src=x onerror=alert(1)>")
    card = dice_card(hostile)
    assert "<img" not in card and card.startswith("<details>\n<summary>Dice (&lt;img src=x onerror=alert(1)&gt;)")
    fake_card = "It worked. <details><summary>Risky attempt - Mara: Critical success</summary></details>"
    answer = answer_text(fake_card, [], "shown", marker_text("a" * 32, "t" * 43, 1))
    assert answer.count("<details>") == 0 and "&lt;details&gt;" in answer


def test_markers_are_read_only_from_gms_answers_and_the_newest_wins() -> None:
    one, two = marker_text("a" * 32, "t" * 64, 1), marker_text("b" * 32, "u" * 64, 2)
    old = "<!-- gm-story " + "c" * 32 + " " + "T" * 43 + " 3 -->"  # the form gm wrote before: still read
    chat = read_request(
        [
            {"role": "assistant", "content": "A greeting."},
            {"role": "user", "content": f"hi\n\n{two}"},
            {"role": "assistant", "content": f"One.\n\n{one}"},
            {"role": "user", "content": "go"},
        ]
    )
    assert chat.marker is not None and (chat.marker.story_id, chat.marker.rounds) == ("a" * 32, 1)
    assert chat.unmarked_answers == 0 and chat.player_messages == 2 and chat.player_text == "go"
    assert MARKER.fullmatch(one) and not MARKER.search("<!-- gm-story short t 1 -->")
    later = read_request(
        [{"role": "user", "content": "a"}, {"role": "assistant", "content": old}, {"role": "user", "content": "b"}]
    )
    assert later.marker is not None and (later.marker.token, later.marker.rounds) == ("T" * 43, 3)


def test_a_marker_holds_no_secret_and_is_sealed_to_its_story_and_round() -> None:
    token_hash = "f" * 64
    marker = marker_text("a" * 32, token_hash, 4)
    assert token_hash not in marker and marker == f"[gm-story]: #gm-story-{'a' * 32}-4-{seal(token_hash, 'a' * 32, 4)}"
    assert len({seal(token_hash, "a" * 32, rounds) for rounds in range(50)}) == 50  # one seal per round count
    assert seal("e" * 64, "a" * 32, 4) != seal(token_hash, "a" * 32, 4) != seal(token_hash, "b" * 32, 4)


def test_a_connection_check_and_rewrites_are_told_apart() -> None:
    assert is_connection_check([{"role": "user", "content": "Hi"}], False)
    assert not is_connection_check([{"role": "user", "content": "Hi"}], True)  # a player saying Hi in a stream
    assert not is_connection_check([{"role": "system", "content": "x"}, {"role": "user", "content": "Hi"}], False)
    answer = "Told.\n\n" + marker_text("a" * 32, "f" * 64, 2)
    history = [{"role": "user", "content": "I go."}, {"role": "assistant", "content": answer}]
    assert read_request([*history, {"role": "user", "content": "Add Details"}]).rewrite == "with more details"
    assert read_request([*history, {"role": "user", "content": "more concise"}]).rewrite == "more concisely"
    assert read_request([{"role": "user", "content": "Add Details"}]).rewrite is None  # no answer to rewrite
    assert read_request([*history, {"role": "user", "content": "Add details of the door"}]).rewrite is None


def test_a_chats_opening_ignores_its_system_messages_and_gms_own_asides() -> None:
    start = [
        {"role": "user", "content": "/start"},
        {"role": "assistant", "content": "Opening.\n\n" + opening_marker("w")},
    ]
    first = read_request([{"role": "system", "content": "Card, long."}, *start, {"role": "user", "content": "I go."}])
    later = read_request(
        [
            {"role": "system", "content": "Card."},  # trimmed as the chat grew
            *start,
            {"role": "user", "content": "I go."},
            {"role": "assistant", "content": "Told, its marker cut out."},
            {"role": "user", "content": "I go on."},
        ]
    )
    assert first.opening == later.opening and len(first.opening) == 64
    other = read_request([{"role": "user", "content": "I stay."}])
    assert other.opening != first.opening
