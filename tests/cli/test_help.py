"""`gm --help` lists every subcommand with a line saying what it does, and `gm COMMAND --help` opens
with a paragraph about it; every argument says what it is for."""

from __future__ import annotations

import argparse

import pytest

from gm.cli import build_parser
from tests.support.command_line import gm


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The subcommands of `parser`, by name (`model check` for a subcommand's own)."""
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:  # argparse lists subparsers nowhere else
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found[name] = sub
                found.update({f"{name} {inner}": parser for inner, parser in subcommands(sub).items()})
    return found


COMMANDS = sorted(subcommands(build_parser()))


def test_gm_help_gives_every_subcommand_a_line() -> None:
    listed = gm("--help")
    assert listed.returncode == 0
    lines = listed.stdout.splitlines()
    for name in (command for command in COMMANDS if " " not in command):
        line = next((line for line in lines if line.split()[:1] == [name]), None)
        assert line is not None and len(line.split()) > 2, f"gm --help has no line saying what '{name}' does"


@pytest.mark.parametrize("command", COMMANDS)
def test_each_subcommand_help_opens_with_a_description(command: str) -> None:
    parser = subcommands(build_parser())[command]
    assert parser.description and len(parser.description.split()) >= 5, f"gm {command} --help has no description"
    shown = gm(*command.split(), "--help")
    assert shown.returncode == 0 and parser.description.split()[0] in shown.stdout
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction | argparse._HelpAction):
            assert action.help, f"gm {command}: {action.dest} has no help"
