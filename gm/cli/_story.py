"""`gm play`, `gm stories`, `gm show` and `gm delete`: the story subcommands of the command line, thin over the
library."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from gm._text import counted, visible, visible_json
from gm.chat.terminal import Chat
from gm.cli._model import choose_judge, model_settings
from gm.cli._parser import REHEARSAL
from gm.cli._settings import settings_of, store_of
from gm.engine.game import Game
from gm.engine.instructions import use_prompts
from gm.engine.transcript import render_transcript, story_public, transcript
from gm.errors import StoryNotFound, UsageError
from gm.models.client import ChatModel, ModelClient
from gm.rehearsal.model import RehearsalModel
from gm.store import Store, Story
from gm.transcript.shapes import as_utc
from gm.world.definition import World, world_from_data
from gm.world.loading import load_world


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
    model = choose_model(arguments, world)  # a model that is not configured is refused before a story starts
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
    chat = Chat(game, story_id, interactive=sys.stdin.isatty() and sys.stdout.isatty(), new=story is None)
    asyncio.run(chat.run())
    return 1 if chat.rounds_failed else 0  # so a script notices a round that could not be played


def run_delete(arguments: argparse.Namespace) -> int:
    store = Store()
    story = _story(store, arguments.story)
    if not arguments.yes:
        if not sys.stdin.isatty():
            raise UsageError("deleting a story cannot be undone; add --yes to delete it without being asked")
        asked = f"Delete story {story.id} ({story.title}, {counted(story.rounds, 'round')}) and its dice record? [y/N] "
        if input(visible(asked)).strip().lower() not in ("y", "yes"):
            print("Nothing was deleted.")
            return 0
    store.delete_story(story.id)
    print(f"Deleted story {story.id}.")
    return 0


def choose_model(arguments: argparse.Namespace, world: World) -> ChatModel:
    """The rehearsal stand-in when asked for by name; otherwise the configured endpoint (never a silent fallback)."""
    if arguments.model == REHEARSAL:
        return RehearsalModel(world)
    return ModelClient(model_settings(arguments))


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
        ended = "ended" if story.ended_at is not None else ""
        print(
            visible(
                f"{story.id}  {as_utc(story.created_at):%Y-%m-%d %H:%M} UTC  {rounds:>10}  {ended:5}  {story.title}"
            )
        )
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
