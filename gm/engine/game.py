"""The library's front door: start or open a story, play rounds, and read what happened.

    game = Game(ModelClient(ModelSettings.from_env()))
    story_id = game.start_story("worlds/harbor")
    result = await game.play(story_id, "I pick the lock of the harbour office.")
    print(result.narration)
    await game.settle()  # let the memory keeper finish before the program exits

A front end needs nothing else: the round's narration, outcomes, rolls and the refusals seen come
back in a `RoundResult`; `RoundFailed` carries one sentence for the player.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar, cast, runtime_checkable

from sqlalchemy.exc import IntegrityError

from gm import dice
from gm._lru import LRU
from gm._text import require_storable
from gm.engine._in_flight import RoundsInFlight
from gm.engine.instructions import prompts_in_use
from gm.engine.judge import Judge
from gm.engine.memory import MemoryKeeper
from gm.engine.results import PlayerRoll, RoundEvents, RoundPaused, RoundResult
from gm.engine.round import continue_round, play_round
from gm.engine.settings import RoundSettings
from gm.engine.table import TableTurn
from gm.engine.transcript import sheets as transcript_sheets
from gm.errors import ModelError, PlayerSeedError, StoryBusy, UsageError
from gm.integrity.fair import check_player_seed
from gm.integrity.secret import end_story
from gm.integrity.seeds import first_seed
from gm.models.client import ChatModel, model_name
from gm.store import BACKGROUND, Store, Story
from gm.transcript.sheets import SheetsPublic
from gm.world.definition import World
from gm.world.loading import load_world
from gm.world.shared import SharedWorlds

log = logging.getLogger(__name__)
T = TypeVar("T")

SHORT_LEASE_SECONDS = 30.0  # the lease taken to end a story or abandon its paused round: ample for one write
CACHED_WORLDS = 1024  # stories whose built World is kept (about 20 KB each); the rest are rebuilt when played
_PLAYS_ONE_WORLD: dict[type, bool] = {}  # per model class: whether its instances play one world at a time


@runtime_checkable
class PlaysOneWorld(Protocol):
    """A model that must know the story's world to play its game master, such as `gm.rehearsal.model.RehearsalModel`."""

    def for_world(self, world: World) -> ChatModel:
        """The model playing a story of `world`."""
        ...


class Game:
    """Stories played with one model (and, optionally, others for the judge and the memory keeper).

    The judge reads every narration that settles a check roll (see `gm.engine.judge`); by default it is the
    game master's own model. A story started with `settings={"judge": "off"}` is not judged, and
    says so in its transcript.
    """

    def __init__(
        self,
        model: ChatModel,
        store: Store | None = None,
        *,
        memory_model: ChatModel | None = None,
        judge_model: ChatModel | None = None,
        settings: RoundSettings | None = None,
        source: dice.DiceSource | None = None,
        cached_worlds: int = CACHED_WORLDS,
        judging: Literal["on", "off"] = "on",
        memory_batch: int | None = None,
    ) -> None:
        prompts_in_use()  # a missing or empty prompt file is an error now, at the start, not in a round
        self.model = model
        self.store = store or Store()
        # Rounds per memory call: `memory_batch`, else GM_MEMORY_BATCH, else 4 (gm.engine.memory).
        self.keeper = MemoryKeeper(self.store, memory_model or model, batch=memory_batch)
        self.judge = Judge(judge_model or model, model_name(judge_model or model))
        self.judging = judging  # the default for new stories; each story keeps its own setting
        self.settings = settings or RoundSettings()
        self.source = source
        self._memory_tasks: set[asyncio.Task[None]] = set()
        self._memory_locks = StoryLocks()
        # Stories whose newest rounds wait for their batch to fill, for `settle` to write. Bounded: a story
        # dropped from it is remembered by its next rounds instead (recall shows it verbatim meanwhile).
        self._waiting: LRU[str, bool] = LRU(cached_worlds)
        self._queued: set[tuple[str, bool]] = set()  # catch-ups waiting for their story's lock (at most the tasks)
        self._worlds: LRU[str, World] = LRU(cached_worlds)
        self._shared_worlds = SharedWorlds(cached_worlds)  # stories of one world share its World (gm.world.shared)
        self.rounds = RoundsInFlight()  # the rounds playing now: `gm serve` drains them (gm.engine._in_flight)

    def start_story(
        self,
        world_path: str | Path,
        *,
        settings: dict[str, Any] | None = None,
        fair: bool = False,
        player_seed: str | None = None,
    ) -> str:
        """Start a story from a world folder, copying its definitions in; a world failing its check is refused."""
        return self.begin(load_world(Path(world_path)), settings=settings, fair=fair, player_seed=player_seed)

    def begin(
        self,
        world: World,
        *,
        settings: dict[str, Any] | None = None,
        token_hash: str | None = None,
        fair: bool = False,
        player_seed: str | None = None,
    ) -> str:
        """Start a story from a loaded world (already checked, as `load_world` does).

        A `fair` story derives its dice from a seed committed now (gm.integrity.fair), with the player's seed mixed
        in if given.
        """
        if player_seed is not None and not fair:
            raise PlayerSeedError("a player's seed is only for a story with fair dice")
        dice_from = (settings or {}).get("dice_from", "engine")
        if dice_from not in ("engine", "player"):
            raise UsageError(f"dice_from is 'engine' or 'player', not {dice_from!r}")
        if dice_from == "player" and fair:
            # Fair dice are derived from a committed seed; faces typed at the table are not, so the two exclude.
            raise UsageError("a story whose checks the player rolls at the table cannot also have fair dice")
        story = Story(
            fair=fair,
            player_seed=check_player_seed(player_seed) if player_seed is not None else None,
            token_hash=token_hash,
            title=world.title,
            world_data=world.world_data,
            dice_data=world.dice_data,
            settings={"dice": "shown", "judge": self.judging, **(settings or {})},
            clock=0 if world.calendar is not None else None,  # the calendar's start date and time
            sheet=world.start_sheets
            if world.sheet_changes
            else None,  # the sheets a story starts with (gm.world.sheet)
        )
        story_id = self.store.create_story(story, first_seed() if fair else None).id
        # built from the very data stored: its first round need not rebuild it
        self._worlds.put(story_id, self._shared_worlds.share(world))
        self.keeper.started(story_id)  # no round to remember yet: its first rounds need not read the database
        return story_id

    def world(self, story_id: str) -> World:
        """The story's world, rebuilt from the definitions copied in at its start.

        Kept once built, for the `cached_worlds` stories played most recently: a story's copied
        definitions never change, and checking them again every round would cost more than the
        rest of the framework's round.
        """
        world = self._worlds.get(story_id)
        if world is None:
            story = self.store.story(story_id)
            world = self._shared_worlds.build(story.world_data, story.dice_data)
            self._worlds.put(story_id, world)
        return world

    async def world_of(self, story_id: str) -> World:
        """`world` for async code: a cached world at once, else read off the loop (Store.off_loop) and checked
        in another thread (raises StoryNotFound). The check takes milliseconds: on the loop, a server's
        other stories would wait on it, and on SQLite's one database thread, their database work."""
        world = self._worlds.get(story_id)
        if world is None:
            story = await self.store.off_loop(self.store.story, story_id)
            world = await asyncio.to_thread(self._shared_worlds.build, story.world_data, story.dice_data)
            self._worlds.put(story_id, world)
        return world

    async def play(
        self,
        story_id: str,
        text: str,
        *,
        facts: tuple[str, ...] = (),
        player_roll: PlayerRoll | None = None,
        events: RoundEvents | None = None,
        table: TableTurn | None = None,
    ) -> RoundResult | RoundPaused:
        """Play one round (with the player's own roll, if any); the memory keeper then runs in the background.

        `table` is a round seats play (gm.engine.table): their actions, in the order they came; the text is then
        theirs, composed by the engine (pass "").

        In a story whose checks are rolled at the table, a round may pause for the player's dice instead
        (`RoundPaused`, with the question); `answer` goes on with it, `abandon` drops it.
        """
        require_storable("the player's text", text)  # refused before anything is written (gm._text)
        options = {"facts": facts, "player_roll": player_roll, "table": table}
        return await self._round(play_round, story_id, text, events, options)

    async def answer(
        self, story_id: str, faces: str, *, events: RoundEvents | None = None
    ) -> RoundResult | RoundPaused:
        """Go on with the story's round paused for dice, with the faces the player typed ("14", "3 5 6 1").

        Wrong faces raise `WrongFaces` (one sentence) and the question stands; it may pause again at a later check.
        """
        return await self._round(continue_round, story_id, faces, events, {})

    async def regenerate(
        self, story_id: str, *, facts: tuple[str, ...] = (), events: RoundEvents | None = None
    ) -> RoundResult | RoundPaused:
        """Play the last round again for a new narration; its rolls are kept, never rolled again.

        `facts` are told to the game master as with `play` (the chat endpoint's player notes, gm.web.compat).
        """
        return await self._round(play_round, story_id, "", events, {"facts": facts, "regenerate": True})

    async def _round(
        self,
        play: Callable[..., Awaitable[RoundResult | RoundPaused]],
        story_id: str,
        text: str,
        events: RoundEvents | None,
        options: dict[str, Any],
    ) -> RoundResult | RoundPaused:
        """One round of the story, played (`play_round`) or taken up again (`continue_round`) with this game's
        model, bounds, dice and judge; an accepted round is then remembered in the background."""
        async with self.rounds.track(story_id):  # ServerStopping while the game drains
            world = await self.world_of(story_id)  # also raises StoryNotFound for an unknown id
            result = await play(
                self.store,
                story_id,
                world,
                self._model_for(world),
                text,
                settings=self.settings,
                source=self.source,
                events=events,
                judge=self.judge,
                **options,
            )
        if isinstance(result, RoundResult):
            self._remember(story_id, number=result.number)
        return result

    def sheets(self, story_id: str) -> SheetsPublic:
        """The story's sheets now and every change its accepted rounds made (gm.world.sheet, docs/sheets.md)."""
        return transcript_sheets(self.store, story_id)

    async def end(self, story_id: str) -> None:
        """End the story: every secret roll in it is shown from now on, and it plays no more rounds
        (gm.integrity.secret). Taken under the story's lease, so it never lands in the middle of a round."""
        busy = "a round of this story is being played right now; end the story when that round is done"
        await self.store.off_loop(_under_lease, self.store, story_id, busy, end_story, self.store, story_id)

    async def delete(self, story_id: str, *, force: bool = False) -> None:
        """Remove the story and everything kept of it, its dice record too (`Store.delete_story`); refused with
        `StoryBusy` while a round is being played, unless `force` (a story whose first round never finished)."""
        await self.store.off_loop(functools.partial(self.store.delete_story, story_id, force=force))
        self._worlds.pop(story_id)
        self._waiting.pop(story_id)

    async def abandon(self, story_id: str) -> int:
        """Drop the story's round paused for dice (its rolls stay); the number of the round dropped.

        Taken under the lease, as a reveal is, so it never lands while that round is being taken up again.
        A later attempt at the same round gets those rolls back (gm.engine._earlier_rolls): abandoning never
        re-rolls."""
        busy = "a round of this story is being played right now; abandon it when that round is done"
        return await self.store.off_loop(_under_lease, self.store, story_id, busy, self.store.drop_paused, story_id)

    def _model_for(self, world: World) -> ChatModel:
        """The game master's model for a story of `world`: a model that plays one world at a time (the
        rehearsal stand-in) is bound to it here, so one Game serves stories of many worlds."""
        model = self.model
        plays_one_world = _PLAYS_ONE_WORLD.get(type(model))
        if plays_one_world is None:
            # isinstance against a runtime-checkable protocol looks for each of its members every time:
            # about 1% of a server's event loop when asked every round, so it is asked once per class.
            plays_one_world = _PLAYS_ONE_WORLD[type(model)] = isinstance(model, PlaysOneWorld)
        if plays_one_world:
            return cast(PlaysOneWorld, model).for_world(world)
        return model

    async def settle(self, *, flush: bool = True) -> None:
        """Wait for memory work in progress, and write the memory of rounds whose batch is not yet due
        too, so nothing is left waiting (call before exiting).

        With `flush=False`, only the work in progress is waited for: rounds waiting for their batch to
        fill stay for the story's next rounds (a bench or test watching the batches uses this)."""
        while self._memory_tasks:
            await asyncio.gather(*list(self._memory_tasks), return_exceptions=True)
        if not flush:
            return
        for story_id in self._waiting.snapshot():
            self._remember(story_id, flush=True)
        while self._memory_tasks:
            await asyncio.gather(*list(self._memory_tasks), return_exceptions=True)

    async def aclose(self) -> None:
        """Close the HTTP connections of the game's models (game master, judge, memory keeper) that hold any.

        The game stays usable: a model called again opens new connections. Call it before the event
        loop ends (`Chat.run` and `gm serve` do), so no connection is left for the loop's end to find.
        """
        models = {id(model): model for model in (self.model, self.keeper.model, self.judge.model)}
        for model in models.values():
            close = getattr(model, "aclose", None)
            if close is not None:
                await close()

    def _remember(self, story_id: str, *, flush: bool = False, number: int | None = None) -> None:
        """Start the memory keeper on the story (after round `number` was accepted), unless it counts the
        round's batch as still short (`MemoryKeeper.due`): a server then makes no database call for it."""
        if number is not None and not flush and not self.keeper.due(story_id, number):
            self._waiting.put(story_id, True)  # for settle, should no later round fill the batch
            return
        if (story_id, flush) in self._queued:
            return  # a catch-up still to start reads the rounds then, this one's included
        self._queued.add((story_id, flush))
        task = asyncio.get_running_loop().create_task(self._catch_up(story_id, flush))
        self._memory_tasks.add(task)
        task.add_done_callback(self._memory_tasks.discard)

    async def _catch_up(self, story_id: str, flush: bool) -> None:
        # One memory keeper per story at a time in this process; across processes the database's
        # unique (story, round) memory refuses a duplicate. Its database work gives way to rounds' (this
        # task's own context: gm.store._workers.BACKGROUND).
        BACKGROUND.set(True)
        async with self._memory_locks.hold(story_id):
            self._queued.discard((story_id, flush))
            try:
                waiting = await self.keeper.catch_up(story_id, flush=flush)
            except (ModelError, IntegrityError) as error:
                # The round stands; its memory is written after a later round (not by settle: a failing
                # memory model is not asked again and again on the way out).
                log.warning("memory for story %s is left for later: %s", story_id, error)
                waiting = False
            except Exception:
                # Anything else is a bug or a broken database: the rounds stay unremembered (shown verbatim, and
                # caught up later) as above, but with its traceback in the log, since nobody awaits this task
                # (`settle` gathers it with return_exceptions) and it would otherwise go unseen.
                log.exception("the memory keeper failed on story %s; its rounds are left for later", story_id)
                waiting = False
            if waiting:
                self._waiting.put(story_id, True)
            else:
                self._waiting.pop(story_id)


def _under_lease(store: Store, story_id: str, busy: str, work: Callable[..., T], *arguments: Any) -> T:
    """`work(*arguments)` while holding the story's lease for a moment: it never lands in the middle of a round.
    `StoryNotFound` first; `StoryBusy` with the sentence `busy` while a round holds the story."""
    store.story(story_id)
    holder = uuid.uuid4().hex
    if not store.take_lease(story_id, holder, SHORT_LEASE_SECONDS):
        raise StoryBusy(busy)
    try:
        return work(*arguments)
    finally:
        store.release_lease(story_id, holder)


@dataclass
class _StoryLock:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    users: int = 0  # tasks holding or waiting for the lock


class StoryLocks:
    """One asyncio lock per story, kept only while a task holds or waits for it (so never more than the tasks).

    A lock is never evicted while in use: that would let a second task take a new lock for the same
    story and run beside the first.
    """

    def __init__(self) -> None:
        self._locks: dict[str, _StoryLock] = {}

    @asynccontextmanager
    async def hold(self, story_id: str) -> AsyncIterator[None]:
        """Hold the story's lock for the block, waiting for any task holding it now."""
        entry = self._locks.setdefault(story_id, _StoryLock())
        entry.users += 1
        try:
            async with entry.lock:
                yield
        finally:
            entry.users -= 1
            if entry.users == 0:
                del self._locks[story_id]

    def __len__(self) -> int:
        return len(self._locks)
