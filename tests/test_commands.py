"""Chat commands: what each line asks for, and clear errors for the rest."""

from __future__ import annotations

import pytest

from gm.commands import CommandError, RollDice, Say, SetDice, Simple, parse_command


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
