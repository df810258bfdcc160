"""The memory keeper's batches (gm.engine.memory): one call for several rounds, each round its own memory,
written in one transaction; never a round missed, even after a crash; and no gap in what the game
master is shown, whatever the batch size."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

from gm import dice
from gm.engine.game import Game
from gm.engine.memory import DEFAULT_BATCH, MAX_BATCH, UNLABELLED_LIMIT, memory_batch, read_summaries
from gm.engine.prompt import VERBATIM_ROUNDS, read_fold, read_keeper_rounds
from gm.errors import OperatorError, UsageError
from gm.store import Store
from gm.store.records import MemoryEntry, ModelCall
from gm.testing import Step, reply
from tests.support.rounds import function_model, table


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def asked(request: dict[str, Any]) -> list[int]:
    """The rounds a memory keeper's request asks about, from their headings."""
    return [int(number) for number in re.findall(r"^=== Round (\d+) ===$", request["messages"][1]["content"], re.M)]


def keeper(request: dict[str, Any]) -> Step:
    """An obliging memory keeper: a labelled line for each round asked; a fold lists the rounds it folded."""
    fold = read_fold(request["messages"][1]["content"])
    if fold is not None:
        return reply(" ".join([fold.summary, *(f"[r{number}]" for number, _ in fold.rounds)]).strip())
    return reply("\n".join(f"Round {number}: Summary of round {number}." for number in asked(request)))


def summaries_asked(requests: list[dict[str, Any]]) -> list[list[int]]:
    """The rounds each summary request asked about (folds left out)."""
    return [asked(request) for request in requests if read_fold(request["messages"][1]["content"]) is None]


def remembered(store: Store, story: str) -> list[int]:
    return [entry.round_number for entry in store.memories(story)]


def test_a_batch_is_one_call_and_one_transaction_for_its_rounds(
    store: Store, harbor: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writes: list[tuple[list[int], int]] = []
    add_memories = store.add_memories

    def spy(entries: list[tuple[str, MemoryEntry]], calls: list[ModelCall]) -> None:
        writes.append(([entry.round_number for _, entry in entries], len(calls)))
        add_memories(entries, calls)

    monkeypatch.setattr(store, "add_memories", spy)

    async def play() -> Any:
        async with table(store, [reply(f"Narration {n}.") for n in range(1, 10)], keeper, memory_batch=4) as t:
            story = t.game.start_story(harbor)
            seen = []
            for number in range(1, 10):
                await t.game.play(story, f"round {number}.")
                await t.game.settle(flush=False)  # the work started, not the batch still filling
                seen.append((len(t.keeper.requests), remembered(store, story)))
            return t, story, seen

    t, story, seen = run(play())
    # after round 8, the second batch and a fold: with batches of 4, the fold comes once 6 are unfolded
    assert seen == [(0, [])] * 3 + [(1, [1, 2, 3, 4])] * 4 + [(3, list(range(1, 9)))] * 2
    assert store.story(story).summary_through == 4
    # leaving the table settles, which writes round 9, whose batch was not yet due
    assert summaries_asked(t.keeper.requests) == [[1, 2, 3, 4], [5, 6, 7, 8], [9]]
    assert writes == [([1, 2, 3, 4], 1), ([5, 6, 7, 8], 1), ([9], 1)]
    assert [entry.summary for entry in store.memories(story)] == [f"Summary of round {n}." for n in range(1, 10)]
    assert len(t.keeper.requests) == 4  # the fold's too
    assert len([c for c in store.model_calls(story) if c.purpose == "memory"]) == 4


def test_settle_writes_a_batch_not_yet_due(store: Store, harbor: Path) -> None:
    async def play() -> Any:
        async with table(store, [reply("One."), reply("Two.")], keeper, memory_batch=4) as t:
            story = t.game.start_story(harbor)
            for number in (1, 2):
                await t.game.play(story, f"round {number}.")
            await t.game.settle(flush=False)
            before = remembered(store, story)
            await t.game.settle()
            return t, story, before

    t, story, before = run(play())
    assert before == [] and remembered(store, story) == [1, 2]
    assert [asked(request) for request in t.keeper.requests] == [[1, 2]]


@pytest.mark.parametrize(
    ("answer", "numbers", "found"),
    [
        ("Round 3: Mara ran.\nRound 4: Jon hid.", [3, 4], {3: "Mara ran.", 4: "Jon hid."}),
        ("Here they are:\n**Round 3:** Mara ran.\n- Round 4 - Jon hid.\n", [3, 4], {3: "Mara ran.", 4: "Jon hid."}),
        ("### Round 3\nMara ran\nfar.\n### Round 4\nJon hid.", [3, 4], {3: "Mara ran\nfar.", 4: "Jon hid."}),
        ("round 3. Mara ran.\nROUND 4) Jon hid.", [3, 4], {3: "Mara ran.", 4: "Jon hid."}),
        ("Round 3: Mara ran.\nRound 3: Again.\nRound 5: Not asked.", [3, 4], {3: "Mara ran."}),  # first kept
        ("Round 3:\nRound 4: Jon hid.", [3, 4], {4: "Jon hid."}),  # an empty summary is none
        ("Mara ran, and then Jon hid.", [3, 4], {}),  # no labels: nothing can be told apart
        ("Mara ran.", [3], {3: "Mara ran."}),  # one round asked: the label may be left out
        ("Round the corner Mara ran.", [3], {3: "Round the corner Mara ran."}),  # not a label
        ("Round 3: Mara\x00 ran.", [3], {3: "Mara\ufffd ran."}),  # notes, not shown: a NUL is replaced
        # a number too long for int() is no label: the rest is still read
        ("Round " + "9" * 5000 + ": x\nRound 4: Jon hid.", [3, 4], {4: "Jon hid."}),
    ],
)
def test_a_batch_answer_is_read_round_by_round(answer: str, numbers: list[int], found: dict[int, str]) -> None:
    assert read_summaries(answer, numbers) == found


def test_rounds_a_batch_answer_leaves_out_are_asked_for_alone(store: Store, harbor: Path) -> None:
    memory = [reply("Round 1: One.\nRound 3: Three."), reply("Two, alone.")]

    async def play() -> Any:
        async with table(store, [reply(f"N{n}.") for n in (1, 2, 3)], memory, memory_batch=3) as t:
            story = t.game.start_story(harbor)
            for number in (1, 2, 3):
                await t.game.play(story, f"round {number}.")
            await t.game.settle(flush=False)
            return t, story

    t, story = run(play())
    assert [asked(request) for request in t.keeper.requests] == [[1, 2, 3], [2]]
    assert [entry.summary for entry in store.memories(story)] == ["One.", "Two, alone.", "Three."]
    assert len([c for c in store.model_calls(story) if c.purpose == "memory"]) == 2


def test_an_answer_without_labels_has_each_round_asked_for_alone(store: Store, harbor: Path) -> None:
    memory = [reply("Mara ran and hid."), reply("One."), reply("Two.")]

    async def play() -> Any:
        async with table(store, [reply("N1."), reply("N2.")], memory, memory_batch=2) as t:
            story = t.game.start_story(harbor)
            for number in (1, 2):
                await t.game.play(story, f"round {number}.")
            await t.game.settle(flush=False)
            return t, story

    t, story = run(play())
    assert [asked(request) for request in t.keeper.requests] == [[1, 2], [1], [2]]
    assert [entry.summary for entry in store.memories(story)] == ["One.", "Two."]


def test_a_keeper_that_never_names_rounds_is_asked_one_round_a_call(store: Store, harbor: Path) -> None:
    def prose(request: dict[str, Any]) -> Step:
        return reply(f"Mara went on ({len(asked(request))} rounds asked).")

    rounds = 2 * (UNLABELLED_LIMIT + 2)

    async def play() -> Any:
        async with table(store, [reply(f"N{n}.") for n in range(1, rounds + 1)], prose, memory_batch=2) as t:
            story = t.game.start_story(harbor)
            for number in range(1, rounds + 1):
                await t.game.play(story, f"round {number}.")
                await t.game.settle(flush=False)
            return t, story

    t, story = run(play())
    sizes = [len(asked(request)) for request in t.keeper.requests if asked(request)]
    # each batch answer names no round, so its rounds are asked again alone; after UNLABELLED_LIMIT such
    # answers in a row, the keeper asks one round a call from the start
    assert sizes == [2, 1, 1] * UNLABELLED_LIMIT + [1] * (rounds - 2 * UNLABELLED_LIMIT)
    assert remembered(store, story) == list(range(1, rounds + 1))


def test_a_later_round_is_never_remembered_before_an_earlier_one(store: Store, harbor: Path) -> None:
    memory = [reply("Round 2: Two.\nRound 3: Three."), reply(""), keeper, keeper]

    async def play() -> Any:
        async with table(store, [reply(f"N{n}.") for n in (1, 2, 3, 4)], memory, memory_batch=3) as t:
            story = t.game.start_story(harbor)
            for number in (1, 2, 3):
                await t.game.play(story, f"round {number}.")
                await t.game.settle(flush=False)
            after_failure = (remembered(store, story), [r.number for r in store.unremembered(story)])
            await t.game.play(story, "round 4.")
            await t.game.settle(flush=False)
            return t, story, after_failure

    t, story, after_failure = run(play())
    # round 1 could not be remembered, so 2 and 3 wait for it, though their summaries came back
    assert after_failure == ([], [1, 2, 3])
    # after round 4, rounds 1 to 3 are asked again; round 4 waits for its batch, written by the table's settle
    assert [asked(request) for request in t.keeper.requests] == [[1, 2, 3], [1], [1, 2, 3], [4]]
    assert remembered(store, story) == [1, 2, 3, 4]
    # every call cost tokens, the failed ones too, and is recorded
    assert len([c for c in store.model_calls(story) if c.purpose == "memory"]) == 4


def test_a_round_regenerated_while_its_batch_is_asked_for_is_remembered_as_regenerated(
    store: Store, harbor: Path
) -> None:
    hold = asyncio.Event()

    async def telling(request: dict[str, Any]) -> Step:
        """Each round remembered by its narration, so a stale memory shows; the first call waits for `hold`."""
        if not hold.is_set():
            await hold.wait()
        kept = read_keeper_rounds(request["messages"][1]["content"])
        return reply("\n".join(f"Round {each.number}: remembers {each.narration}" for each in kept))

    async def play() -> Any:
        script = [reply("Narration 1."), reply("Narration 2."), reply("Narration 2, told again.")]
        async with table(store, script, telling, memory_batch=2) as t:
            story = t.game.start_story(harbor)
            await t.game.play(story, "round 1.")
            await t.game.play(story, "round 2.")  # the batch of rounds 1 and 2 is due; its call waits
            await asyncio.sleep(0.05)
            await t.game.regenerate(story)
            hold.set()
            await t.game.settle(flush=False)
            meanwhile = [(entry.round_number, entry.summary) for entry in store.memories(story)]
            return story, meanwhile

    story, meanwhile = run(play())
    assert meanwhile == [(1, "remembers Narration 1.")]  # round 2's stale memory was not written
    assert [(entry.round_number, entry.summary) for entry in store.memories(story)] == [
        (1, "remembers Narration 1."),
        (2, "remembers Narration 2, told again."),
    ]


def game_master_saw(request: dict[str, Any]) -> set[int]:
    """The earlier rounds a game master's request shows: folded, summarised or verbatim."""
    messages = request["messages"]
    past = messages[1]["content"] if messages[1]["role"] == "system" else ""
    shown = {int(number) for number in re.findall(r"\[r(\d+)\]", past)}
    shown |= {int(number) for number in re.findall(r"^Round (\d+): ", past, re.M)}
    for message in messages[1:-1]:
        if message["role"] == "user" and (verbatim := re.fullmatch(r"round (\d+)\.", message["content"])):
            shown.add(int(verbatim.group(1)))
    return shown


@pytest.mark.parametrize("batch", [1, 2, 3, 4, 5, MAX_BATCH])
def test_the_game_master_never_meets_a_gap_whatever_the_batch(store: Store, harbor: Path, batch: int) -> None:
    calls = 0

    def failing_keeper(request: dict[str, Any]) -> Step:
        nonlocal calls
        calls += 1
        return reply("") if calls % 3 == 0 else keeper(request)  # every third call, summaries or folds, fails

    rounds = 24
    games: list[Game] = []

    def narrating(number: int) -> Any:
        async def step(request: dict[str, Any]) -> Step:
            """A game master slower than the memory keeper, as a real model is: it answers once the keeper's work
            in progress is done. (Rounds against an instant fake outrun the keeper, which then lags a few rounds
            behind, and a catch-up of three calls or more always meets a failing one, so it never folds.)"""
            await games[0].settle(flush=False)
            return reply(f"Narration {number}.")

        return step

    async def play() -> Any:
        script = [narrating(n) for n in range(1, rounds + 1)]
        async with table(store, script, failing_keeper, memory_batch=batch) as t:
            games.append(t.game)
            story = t.game.start_story(harbor)
            for number in range(1, rounds + 1):
                await t.game.play(story, f"round {number}.")  # the keeper runs beside the next rounds
            return t, story

    t, story = run(play())
    for number, request in enumerate(t.master.requests, start=1):
        assert game_master_saw(request) >= set(range(1, number)), f"round {number} met a gap"
    assert store.story(story).summary_through > 0, "no fold happened"
    # the rounds remembered are the first ones, whatever failed last (settle does not ask a failing keeper again)
    kept = remembered(store, story)
    assert kept == list(range(1, len(kept) + 1)) and len(kept) >= rounds - 2 * batch
    assert [record.number for record in store.unremembered(story)] == list(range(len(kept) + 1, rounds + 1))


def test_rounds_a_crash_left_unremembered_are_caught_up_by_a_new_game(store: Store, harbor: Path) -> None:
    hold = asyncio.Event()

    async def stuck(request: dict[str, Any]) -> Step:
        await hold.wait()  # the memory call is in flight when the process "dies"
        return keeper(request)

    async def first_process() -> str:
        master = function_model([reply(f"Narration {n}.") for n in range(1, 6)])
        game = Game(master, store, memory_model=function_model(stuck), source=dice.seeded_source(1), memory_batch=4)
        story = game.start_story(harbor)
        for number in range(1, 6):
            await game.play(story, f"round {number}.")
        await asyncio.sleep(0)
        return story  # no settle: asyncio.run cancels the keeper's tasks, as a crash would end them

    story = run(first_process())
    assert store.story(story).rounds == 5 and remembered(store, story) == []

    async def second_process() -> Any:
        async with table(store, [reply(f"Narration {n}.") for n in range(6, 10)], keeper, memory_batch=4) as t:
            for number in range(6, 10):
                await t.game.play(story, f"round {number}.")
                await t.game.settle(flush=False)
            return t

    t = run(second_process())
    for number, request in enumerate(t.master.requests, start=6):
        assert game_master_saw(request) >= set(range(1, number)), f"round {number} met a gap"
    # after round 6: rounds 1 to 4 in one call (5 and 6 wait); after round 8: 5 to 8; settle: 9
    assert summaries_asked(t.keeper.requests) == [[1, 2, 3, 4], [5, 6, 7, 8], [9]]
    assert [entry.summary for entry in store.memories(story)] == [f"Summary of round {n}." for n in range(1, 10)]


def reads_of_unremembered(store: Store, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every time a keeper reads the story's unremembered rounds from the database, its story's id."""
    reads: list[str] = []
    keeper_rounds = store.keeper_rounds

    def spy(story_id: str) -> Any:
        reads.append(story_id)
        return keeper_rounds(story_id)

    monkeypatch.setattr(store, "keeper_rounds", spy)
    return reads


def test_rounds_short_of_a_batch_are_counted_without_reading_the_database(
    store: Store, harbor: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = reads_of_unremembered(store, monkeypatch)

    async def play(started_here: bool) -> list[int]:
        async with table(store, [reply(f"Narration {n}.") for n in range(1, 10)], keeper, memory_batch=4) as t:
            # one started by another process's game is one this game has counted nothing of
            starter = t.game if started_here else Game(function_model([]), store)
            story = starter.start_story(harbor)
            read_after = []
            for number in range(1, 10):
                await t.game.play(story, f"round {number}.")
                await t.game.settle(flush=False)
                if reads:
                    read_after.append(number)
                    reads.clear()
            return read_after

    # a story this game started has no round yet to count; rounds 4 and 8 fill a batch; the others are counted
    assert run(play(started_here=True)) == [4, 8]
    # one it did not start is read once first, at round 1
    assert run(play(started_here=False)) == [1, 4, 8]


def test_a_round_another_game_played_makes_the_keeper_read_again(
    store: Store, harbor: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = reads_of_unremembered(store, monkeypatch)

    async def play() -> tuple[str, list[str], list[int]]:
        async with table(store, [reply(f"Narration {n}.") for n in (1, 2, 4)], keeper, memory_batch=4) as first:
            story = first.game.start_story(harbor)
            for number in (1, 2):
                await first.game.play(story, f"round {number}.")
                await first.game.settle(flush=False)
            # another process plays round 3; its keeper finds 3 rounds waiting, short of a batch
            second = Game(
                function_model([reply("Narration 3.")]),
                store,
                memory_model=function_model(keeper),
                source=dice.seeded_source(1),
                memory_batch=4,
            )
            await second.play(story, "round 3.")
            await second.settle(flush=False)
            assert remembered(store, story) == []
            reads.clear()
            await first.game.play(story, "round 4.")  # the first game counted 2 rounds; 4 are waiting
            await first.game.settle(flush=False)
            return story, list(reads), remembered(store, story)

    story, read, after_round_4 = run(play())
    assert read == [story]
    assert after_round_4 == [1, 2, 3, 4]


def test_the_batch_is_set_on_the_game_or_by_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GM_MEMORY_BATCH", raising=False)
    assert memory_batch() == DEFAULT_BATCH == VERBATIM_ROUNDS + 1
    monkeypatch.setenv("GM_MEMORY_BATCH", " 2 ")
    assert memory_batch() == 2 and memory_batch(1) == 1
    for wrong in ("0", "9", "two", "2.5", "-1", "\u0662"):
        monkeypatch.setenv("GM_MEMORY_BATCH", wrong)
        with pytest.raises(OperatorError, match=r"^GM_MEMORY_BATCH is the number of rounds .* from 1 to 8, not "):
            memory_batch()
    for value in (0, MAX_BATCH + 1, True):
        with pytest.raises(UsageError, match=r"^memory_batch is a whole number of rounds from 1 to 8"):
            memory_batch(value)
