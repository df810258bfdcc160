"""`gm play`, `gm stories` and `gm show`: the story subcommands of the command line, thin over the library."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from gm._text import counted, visible, visible_json
from gm.chat.terminal import Chat
from gm.cli._settings import settings_of, store_of
from gm.engine.game import Game
from gm.engine.instructions import PROMPTS_ENV, use_prompts
from gm.engine.judge import judge_settings
from gm.engine.transcript import render_transcript, story_public, transcript
from gm.errors import StoryNotFound, UsageError
from gm.models.client import ChatModel, ModelClient, ModelSettings
from gm.rehearsal.model import RehearsalModel
from gm.store import Store, Story
from gm.transcript.shapes import as_utc
from gm.world.definition import World, world_from_data
from gm.world.loading import load_world

REHEARSAL = "rehearsal"


def add_story_subcommands(subcommands: argparse._SubParsersAction[Any]) -> None:
    """Add `gm play`, `gm stories` and `gm show` to the command line."""
    play = subcommands.add_parser(
        "play",
        help="play a story in the terminal",
        description="gm play WORLD starts a story; gm play --story ID continues one.",
    )
    play.add_argument("world", nargs="?", type=Path, help="a world folder (to start a new story)")
    play.add_argument("--story", help="the id of a story to continue, or a unique start of it (6+ characters)")
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
    play.add_argument("--model", help=f"the model's name (default GM_MODEL), or '{REHEARSAL}' to play offline")
    play.add_argument("--base-url", help="an OpenAI-compatible endpoint (default OPENAI_BASE_URL)")
    play.add_argument("--api-key", help="the endpoint's key (default OPENAI_API_KEY)")
    add_tools_argument(play)
    add_judge_argument(play)
    add_prompts_argument(play)
    play.set_defaults(run=run_play)

    stories = subcommands.add_parser("stories", help="list the stories")
    stories.add_argument("--json", action="store_true", help="print them as JSON")
    stories.set_defaults(run=run_stories)

    show = subcommands.add_parser("show", help="print a story's transcript: rounds, narration, outcomes, every roll")
    show.add_argument("story", help="the story's id, or a unique start of it (6 characters or more)")
    show.add_argument("--json", action="store_true", help="print the transcript as JSON (a stable shape)")
    show.set_defaults(run=run_show)


def run_play(arguments: argparse.Namespace) -> int:
    settings = settings_of(arguments)
    use_prompts(arguments.prompts, settings)  # every prompt file is checked before anything else
    store = store_of(arguments)
    if arguments.story:
        story: Story | None = _story(store, arguments.story)
        assert story is not None
        world = world_from_data(story.world_data, story.dice_data)
    elif arguments.world is not None:
        if not arguments.world.exists():
            raise UsageError(f"there is no world folder '{arguments.world}'")
        story = None
        world = load_world(arguments.world)  # a world failing its check is refused here, every problem listed
    else:
        raise UsageError("name a world to start a story (gm play WORLD) or a story to continue (--story ID)")
    if story is not None and (arguments.fair or arguments.player_seed is not None or arguments.dice_from):
        raise UsageError(
            "--fair, --player-seed and --dice-from choose a new story's dice; a story keeps the dice it began with"
        )
    if arguments.player_seed is not None and not arguments.fair:
        raise UsageError("--player-seed is for a story with fair dice: add --fair")
    model = choose_model(arguments, world)
    game = Game(model, store, judge_model=choose_judge(arguments, model), memory_batch=settings.memory_batch)
    judging = {} if arguments.judge is None else {"judge": "off" if arguments.judge == "off" else "on"}
    if story is None:
        story_id = game.begin(
            world,
            settings={"dice": arguments.dice or "shown", **judging, "dice_from": arguments.dice_from or "engine"},
            fair=arguments.fair,
            player_seed=arguments.player_seed,
        )
    else:
        story_id = story.id
        if arguments.dice or judging:
            store.update_settings(story_id, {**({"dice": arguments.dice} if arguments.dice else {}), **judging})
    if store.story(story_id).fair:
        seed = store.current_seed(story_id)
        print(f"Fair dice: the seed's commitment is {seed.commitment} (gm reveal {story_id} publishes the seed)")
    if arguments.model == REHEARSAL:
        print("Rehearsal: an offline stand-in plays the game master; no model is called.", flush=True)
    chat = Chat(game, story_id, interactive=sys.stdin.isatty() and sys.stdout.isatty())
    asyncio.run(chat.run())
    return 1 if chat.rounds_failed else 0  # so a script notices a round that could not be played


def choose_model(arguments: argparse.Namespace, world: World) -> ChatModel:
    """The rehearsal stand-in when asked for by name; otherwise the configured endpoint (never a silent fallback)."""
    if arguments.model == REHEARSAL:
        return RehearsalModel(world)
    return ModelClient(model_settings(arguments))


def model_settings(arguments: argparse.Namespace) -> ModelSettings:
    """The endpoint's settings from the flags, the environment filling in what they leave out."""
    return ModelSettings.from_settings(
        settings_of(arguments),
        base_url=arguments.base_url,
        api_key=arguments.api_key,
        model=arguments.model,
        tools=arguments.tools,
    )


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
        help=f"a folder with the models' instructions, an edited copy of prompts/ (default {PROMPTS_ENV}, else the"
        " installed ones)",
    )


def choose_judge(arguments: argparse.Namespace, master: ChatModel) -> ChatModel | None:
    """The judge's own model where one is configured (--judge MODEL, GM_JUDGE_*); None to use the game master's."""
    endpoint = getattr(master, "settings", None)
    if not isinstance(endpoint, ModelSettings):
        return None  # the rehearsal plays its own judge
    named = None if arguments.judge in (None, "off") else arguments.judge
    settings = judge_settings(endpoint, settings_of(arguments), named)
    return None if settings == endpoint else ModelClient(settings)


def run_stories(arguments: argparse.Namespace) -> int:
    store = store_of(arguments)
    stories = store.stories()
    if arguments.json:
        print(json.dumps([story_public(store, story).model_dump(mode="json") for story in stories], indent=2))
        return 0
    if not stories:
        print("No stories yet; start one with gm play WORLD.")
    for story in stories:
        rounds = counted(story.rounds, "round")
        print(visible(f"{story.id}  {as_utc(story.created_at):%Y-%m-%d %H:%M} UTC  {rounds:>10}  {story.title}"))
    return 0


def run_show(arguments: argparse.Namespace) -> int:
    store = store_of(arguments)
    data = transcript(store, _story(store, arguments.story).id)
    if arguments.json:
        print(visible_json(json.dumps(data.model_dump(mode="json"), indent=2, ensure_ascii=False)))
    else:
        print(visible(render_transcript(data)))
    return 0


def _story(store: Store, typed: str) -> Story:
    """The story a typed id names: whole, or a unique start of at least 6 characters (`Store.find_story_id`)."""
    try:
        return store.story(store.find_story_id(typed))
    except StoryNotFound as error:
        raise UsageError(f"{error}; gm stories lists them") from None
