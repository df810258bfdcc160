"""Chat commands: what each line asks for, and clear errors for the rest."""

from __future__ import annotations

from pathlib import Path

import pytest

from gm.engine.commands import MAX_LINE, RollDice, Say, SetDice, Simple, parse_command
from gm.errors import CommandError
from tests.support.command_line import gm
from tests.support.paths import SAMPLE_WORLDS


def test_plain_text_is_for_the_game_master() -> None:
    assert parse_command("  I open the door.  ") == Say("I open the door.")
    assert parse_command("   ") is None


@pytest.mark.parametrize(
    ("line", "notation", "purpose"),
    [
        ("/roll 2d6+1 pick the lock", "2d6+1", "pick the lock"),
        ("/roll 2d6 + 1 pick the lock", "2d6+1", "pick the lock"),
        ("/ROLL d20", "d20", ""),
        ("/roll 4d6kh3 - 2 for the crowd", "4d6kh3-2", "for the crowd"),
        ("/roll 1d20 1 more try", "1d20", "1 more try"),  # "1d20 1" is not notation, so the 1 is words
    ],
)
def test_roll_takes_the_longest_notation_and_the_rest_as_purpose(line: str, notation: str, purpose: str) -> None:
    command = parse_command(line)
    assert isinstance(command, RollDice)
    assert command.roll.expression.text == notation and command.roll.purpose == purpose
    assert command.text == line


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("/roll 2d6+x pick the lock", "2d6+x: unexpected 'x' at column 5"),
        ("/roll", "say what to roll"),
        ("/roll 4d6kh5", "keep 5 of 4"),
        ("/dice sometimes", "/dice shown or /dice hidden"),
        ("/fly away", "no command /fly"),
        ("/quit now", "takes nothing"),
    ],
)
def test_bad_commands_are_one_clear_sentence(line: str, words: str) -> None:
    with pytest.raises(CommandError) as caught:
        parse_command(line)
    assert words in str(caught.value) and "\n" not in str(caught.value)


def test_the_other_commands() -> None:
    assert parse_command("/dice HIDDEN") == SetDice("hidden")
    assert parse_command("/dice shown") == SetDice("shown")
    assert [parse_command(f"/{name}") for name in ("open", "regenerate", "help", "quit", "exit")] == [
        Simple("open"),
        Simple("regenerate"),
        Simple("help"),
        Simple("quit"),
        Simple("quit"),
    ]


def test_a_turn_holds_at_most_max_line_characters() -> None:
    assert MAX_LINE == 4000  # the play page's text box and the API say the same (tests/test_play_page.py)
    assert parse_command("a" * MAX_LINE) == Say("a" * MAX_LINE)
    assert parse_command(f"  {'a' * MAX_LINE}  \n") == Say("a" * MAX_LINE)  # spaces around do not count
    with pytest.raises(CommandError, match=r"^that is 4,001 characters long; at most 4,000 fit in one turn"):
        parse_command("a" * (MAX_LINE + 1))


def test_the_terminal_refuses_an_overlong_turn_and_sends_nothing(tmp_path: Path) -> None:
    world = SAMPLE_WORLDS / "tea-house"
    env = {"GM_DATABASE_URL": f"sqlite:///{tmp_path / 'gm.db'}"}
    played = gm("play", world, "--model", "rehearsal", stdin="x" * 5000 + "\nI pour the tea.\n", env=env)
    assert played.returncode == 0
    assert "error: that is 5,000 characters long; at most 4,000 fit in one turn" in played.stderr
    shown = gm("stories", env=env).stdout
    assert " 1 round  The Second Pot" in shown  # only the second line was played
