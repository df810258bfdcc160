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
    marker_text,
    parse_model,
    player_command_text,
    read_request,
    same_text,
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
    assert "<img" not in card and card.startswith("<details><summary>Dice (&lt;img src=x onerror=alert(1)&gt;)")
    fake_card = "It worked. <details><summary>Risky attempt - Mara: Critical success</summary></details>"
    answer = answer_text(fake_card, [], "shown", marker_text("a" * 32, "t" * 43, 1))
    assert answer.count("<details>") == 0 and "&lt;details&gt;" in answer


def test_markers_are_read_only_from_gms_answers_and_the_newest_wins() -> None:
    one, two = marker_text("a" * 32, "t" * 43, 1), marker_text("b" * 32, "u" * 43, 2)
    chat = read_request(
        [
            {"role": "assistant", "content": "A greeting."},
            {"role": "user", "content": f"hi {two}"},
            {"role": "assistant", "content": f"One. {one}"},
            {"role": "user", "content": "go"},
        ]
    )
    assert chat.marker is not None and (chat.marker.story_id, chat.marker.rounds) == ("a" * 32, 1)
    assert chat.unmarked_answers == 0 and chat.player_messages == 2 and chat.player_text == "go"
    assert MARKER.fullmatch(one) and not MARKER.search("<!-- gm-story short t 1 -->")
