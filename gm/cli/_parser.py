"""The command line's grammar: every subcommand and its arguments, and nothing of what runs them.

Building the parser imports only `argparse`, so `gm --help`, `gm --version` and a bad argument answer
at once. Each subcommand names the function that runs it as `"module:function"` (`Runner`), and
`gm.cli.main` imports that module only when the subcommand runs: `gm roll` never loads the model
client, the database or the web server (bench/startup_bench.py measures it, and
tests/cli/test_startup.py keeps it so).
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from gm import __version__
from gm.errors import UsageError

REHEARSAL = "rehearsal"  # the model name that plays offline, with the rehearsal stand-in
# Not 8000, which vLLM and SillyTavern listen on by default, nor 8080 (Open WebUI, llama.cpp), 11434 (Ollama)
# or 1234 (LM Studio): gm serve usually runs beside one of them. 8765 is `gm edit`'s.
DEFAULT_PORT = 8790

Subcommands = argparse._SubParsersAction  # argparse exposes no public name for the object add_subparsers returns


class Runner:
    """The function that runs a subcommand, named as `module` and `function`, imported when it runs."""

    __slots__ = ("function", "module")

    def __init__(self, module: str, function: str) -> None:
        self.module = module
        self.function = function

    def load(self) -> Callable[[argparse.Namespace], int]:
        """The function itself: importing its module is the subcommand's start-up cost, paid by it alone."""
        run: Callable[[argparse.Namespace], int] = getattr(importlib.import_module(self.module), self.function)
        return run


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


def build_parser() -> argparse.ArgumentParser:
    """The whole command line: `gm --help` lists each subcommand with one line saying what it does."""
    parser = _Parser(
        prog="gm",
        description="A game master whose dice are rolled by code. 'gm COMMAND --help' tells more of each command.",
    )
    parser.add_argument("--version", action="version", version=f"gm {__version__}")
    subcommands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND")
    for add in (_roll, _odds, _check, _play, _stories, _show, _delete, _audit, _reveal, _serve, _edit, _model):
        add(subcommands)
    return parser


def _command(subcommands: Subcommands[Any], name: str, help: str, description: str, run: Runner) -> Any:
    """A subcommand with its line in `gm --help` (`help`) and the paragraph atop `gm NAME --help`."""
    command = subcommands.add_parser(name, help=help, description=description)
    command.set_defaults(run=run)
    return command


def _roll(subcommands: Subcommands[Any]) -> None:
    roll = _command(
        subcommands,
        "roll",
        "roll dice notation such as 4d6kh3+2",
        "gm roll NOTATION rolls the dice and prints each face, the dropped ones in brackets, and the total.",
        Runner("gm.cli._dice", "run_roll"),
    )
    roll.add_argument("notation", nargs="+", help="dice notation; spaces around + and - are fine")
    roll.add_argument("--seed", type=int, help="a seed for a reproducible roll (not for play)")
    roll.add_argument("--hit", type=int, help="read the roll as successes: count kept dice showing HIT or more")
    roll.add_argument("--json", action="store_true", help="print the itemised roll as JSON")


def _odds(subcommands: Subcommands[Any]) -> None:
    odds = _command(
        subcommands,
        "odds",
        "exact odds of notation, or of each band of a check",
        "gm odds NOTATION [--hit H] [--modifier M] | "
        "gm odds DICE_JSON_OR_WORLD CHECK [--target T] [--character NAME [--opponent NAME] | --modifier M] "
        "[--edge advantage|disadvantage]",
        Runner("gm.cli._dice", "run_odds"),
    )
    odds.add_argument("subject", nargs="+", help="dice notation, or a dice.json file or world folder and a check key")
    odds.add_argument("--hit", type=int, help="odds of the number of successes: kept dice showing HIT or more")
    odds.add_argument("--target", type=int, help="the target of an over/under check")
    odds.add_argument("--modifier", type=int, help="a modifier added to the roll (default 0)")
    odds.add_argument("--character", help="a check rolled for this character of a world: its variable is the modifier")
    odds.add_argument("--opponent", help="an opposed check's opponent, a character of the world, with --character")
    odds.add_argument(
        "--edge",
        choices=["advantage", "disadvantage"],
        help="only this edge's odds (by default a check with edge dice shows no edge, then each edge)",
    )
    odds.add_argument(
        "--json",
        action="store_true",
        help="print min, max, mean and each value's probability as JSON (decimals; values under 1e-9 left out)",
    )
    odds.add_argument("--exact", action="store_true", help="with --json: every probability as an exact fraction")


def _check(subcommands: Subcommands[Any]) -> None:
    check = _command(
        subcommands,
        "check",
        "validate worlds (world.json and dice.json) or dice.json files",
        "gm check PATH... checks world folders, world.json or dice.json files, or folders of worlds, and lists "
        "every problem at once. Exit 1 if any has an error.",
        Runner("gm.cli._check", "run_check"),
    )
    check.add_argument(
        "paths", nargs="+", type=Path, help="world folders, world.json or dice.json files, or a folder of worlds"
    )
    check.add_argument("--json", action="store_true", help="print the problems as JSON")


def _play(subcommands: Subcommands[Any]) -> None:
    play = _command(
        subcommands,
        "play",
        "play a story in the terminal",
        "gm play WORLD starts a story; gm play --story ID continues one. Lines piped in are played one a round.",
        Runner("gm.cli._story", "run_play"),
    )
    play.add_argument("world", nargs="?", type=Path, help="a world folder (to start a new story)")
    play.add_argument("--story", help="the id of a story to continue, or a unique start of it (6 characters or more)")
    play.add_argument("--dice", choices=["shown", "hidden"], help="show the dice under the narration, or not")
    play.add_argument(
        "--fair",
        action="store_true",
        help="provably fair dice for a new story: derived from a seed committed now (gm reveal publishes it)",
    )
    play.add_argument("--player-seed", help="with --fair: your own seed, mixed into the dice")
    play.add_argument(
        "--dice-from",
        choices=["engine", "player"],
        help="who rolls a new story's checks: the engine (the default), or you at the table, typing the faces",
    )
    add_model_arguments(play, rehearsal="to play offline")
    add_tools_argument(play)
    add_judge_argument(play)
    add_prompts_argument(play)


def _stories(subcommands: Subcommands[Any]) -> None:
    stories = _command(
        subcommands,
        "stories",
        "list the stories: id, start (UTC), rounds, ended or not, title",
        "gm stories lists the stories in the database (GM_DATABASE_URL), oldest first.",
        Runner("gm.cli._story", "run_stories"),
    )
    stories.add_argument("--json", action="store_true", help="print them as JSON")


def _show(subcommands: Subcommands[Any]) -> None:
    show = _command(
        subcommands,
        "show",
        "print a story's transcript: rounds, narration, outcomes, every roll",
        "gm show STORY prints the story's transcript, secret rolls included (it is the operator's view).",
        Runner("gm.cli._story", "run_show"),
    )
    show.add_argument("story", help="the story's id, or a unique start of it (6 characters or more)")
    show.add_argument("--json", action="store_true", help="print the transcript as JSON (a stable shape)")


def _delete(subcommands: Subcommands[Any]) -> None:
    delete = _command(
        subcommands,
        "delete",
        "delete a story, with its dice record",
        "Delete a story and everything kept of it: rounds, memory, model calls and its dice record "
        "(rolls, hash chain, seeds), so gm audit can no longer check it from the database. Export it first "
        "(gm show STORY --json > story.json) to keep a transcript that gm audit --file still checks.",
        Runner("gm.cli._story", "run_delete"),
    )
    delete.add_argument("story", help="the story's id, or a unique start of it (6 characters or more)")
    delete.add_argument("--yes", action="store_true", help="do not ask (needed when not at a terminal)")


def _audit(subcommands: Subcommands[Any]) -> None:
    checking = _command(
        subcommands,
        "audit",
        "check a story's dice: the roll chain, every total and band, outcomes, fair seeds",
        "gm audit STORY checks a story in the database; gm audit --file TRANSCRIPT.json checks an "
        "exported transcript (gm show STORY --json) with no database. Exit 1 on any mismatch.",
        Runner("gm.cli._audit", "run_audit"),
    )
    checking.add_argument("story", nargs="?", help="the story's id, or a unique start of it (6 characters or more)")
    checking.add_argument("--file", type=Path, help="a transcript exported with gm show STORY --json")
    checking.add_argument(
        "--since",
        type=Path,
        metavar="EARLIER.json",
        help="a transcript of the story saved before: its rolls and commitments must be unchanged",
    )
    checking.add_argument("--json", action="store_true", help="print the whole report as JSON")


def _reveal(subcommands: Subcommands[Any]) -> None:
    revealing = _command(
        subcommands,
        "reveal",
        "publish a fair story's seed so far, and commit a fresh one for the rolls that follow",
        "gm reveal STORY publishes the seed of a story with fair dice (gm play --fair), so anyone can check its "
        "rolls with gm audit; the rolls that follow use a fresh seed, whose commitment it prints.",
        Runner("gm.cli._audit", "run_reveal"),
    )
    revealing.add_argument("story", help="the story's id, or a unique start of it (6 characters or more)")
    revealing.add_argument("--json", action="store_true", help="print the revealed seed and the new commitment as JSON")


def _serve(subcommands: Subcommands[Any]) -> None:
    serve = _command(
        subcommands,
        "serve",
        "serve the story API, the play page and the editor over HTTP",
        "gm serve runs the web server: the story API under /api (described at /docs), the play page at /, "
        "the OpenAI-compatible endpoint at /v1 for chat front ends, and the world editor at /editor.",
        Runner("gm.cli._serve", "run_serve"),
    )
    serve.add_argument("--worlds", type=Path, default=Path("worlds"), help="the worlds folder (default worlds/)")
    serve.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"the port (default {DEFAULT_PORT})")
    serve.add_argument(
        "--workers",
        type=int,
        default=1,
        help="server processes on the one port, one per core (default 1; more than 1 needs PostgreSQL)",
    )
    serve.add_argument(
        "--editor",
        action="store_true",
        help="also mount the world editor at /editor when --host serves other machines (it then asks for a login)",
    )
    add_model_arguments(serve, rehearsal="to play each story's world offline")
    serve.add_argument(
        "--rehearsal-delay",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="with --model rehearsal: seconds each game-master answer takes, to try a front end's stop button",
    )
    add_tools_argument(serve)
    add_judge_argument(serve)
    add_prompts_argument(serve)
    serve.add_argument(
        "--log-format",
        choices=("text", "json"),
        default=None,
        help="log lines for people, or one JSON object per line (default GM_LOG_FORMAT, else text)",
    )


def _edit(subcommands: Subcommands[Any]) -> None:
    edit = _command(
        subcommands,
        "edit",
        "edit the worlds in a folder in your browser (world.json and dice.json as forms)",
        "gm edit [WORLDS_DIR] serves the world editor; open the address it prints.",
        Runner("gm.cli._edit", "run_edit"),
    )
    edit.add_argument(
        "worlds", nargs="?", type=Path, default=Path("worlds"), help="the folder of worlds (default worlds/)"
    )
    edit.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address to listen on (default 127.0.0.1: this machine only; any other asks for a login)",
    )
    edit.add_argument("--port", type=int, default=8765, help="the port to listen on (default 8765)")


def _model(subcommands: Subcommands[Any]) -> None:
    model = subcommands.add_parser(
        "model",
        help="the model endpoint: gm model check",
        description="gm model check probes the model endpoint gm is configured for.",
    )
    actions = model.add_subparsers(dest="action", required=True, parser_class=_Parser, metavar="ACTION")
    check = _command(
        actions,
        "check",
        "probe the endpoint: reachable, models, tool calls, structured output, reasoning, gm's settings",
        "Exit 0 if gm can play on the endpoint; otherwise 1, with one error line saying what to change.",
        Runner("gm.cli._model", "run_model_check"),
    )
    check.add_argument("--model", help="the model's name (default GM_MODEL)")
    check.add_argument("--base-url", help="an OpenAI-compatible endpoint (default OPENAI_BASE_URL)")
    check.add_argument("--api-key", help="the endpoint's key (default OPENAI_API_KEY)")
    add_tools_argument(check)
    check.add_argument("--timeout", type=float, default=60.0, help="seconds allowed each probe (default 60)")


def add_model_arguments(parser: argparse.ArgumentParser, *, rehearsal: str) -> None:
    """`--model`, `--base-url` and `--api-key`: the game master's endpoint, the environment filling in the rest."""
    parser.add_argument("--model", help=f"the model's name (default GM_MODEL), or '{REHEARSAL}' {rehearsal}")
    parser.add_argument("--base-url", help="an OpenAI-compatible endpoint (default OPENAI_BASE_URL)")
    parser.add_argument("--api-key", help="the endpoint's key (default OPENAI_API_KEY)")


def add_tools_argument(parser: argparse.ArgumentParser) -> None:
    """`--tools native|prompted|auto`: how tools are offered to the model (see gm.models.client)."""
    parser.add_argument(
        "--tools",
        choices=["native", "prompted", "auto"],
        help="offer tools natively, describe them in the prompt (for servers without tool calling), or decide "
        "per endpoint and model on the first refusal (default GM_TOOLS, else auto)",
    )


def add_judge_argument(parser: argparse.ArgumentParser) -> None:
    """`--judge MODEL|off`: the narration judge's model, or no judge (the story then says so)."""
    parser.add_argument(
        "--judge",
        metavar="MODEL|off",
        help="the model that judges narrations (default GM_JUDGE_MODEL, else the game master's), or 'off'",
    )


def add_prompts_argument(parser: argparse.ArgumentParser) -> None:
    """`--prompts DIR`: an edited copy of the prompts/ folder, to use instead of the installed one."""
    parser.add_argument(
        "--prompts",
        type=Path,
        metavar="DIR",
        help="a folder with the models' instructions, an edited copy of prompts/ (default GM_PROMPTS, else the"
        " installed ones)",
    )
