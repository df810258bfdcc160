"""An empty memory is never stored: a memory-keeper answer with no usable text (an empty message, a
tool call instead of text, only reasoning) is a failed memory call, played through the real client
against the fake model. The round stays unremembered and is caught up after a later round; the fold
works the same way."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest

from gm.engine.memory import FOLD_AFTER, summary_text
from gm.store import Store
from gm.testing import Step, call, reply
from tests.support.rounds import table


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def is_fold(request: dict[str, Any]) -> bool:
    return "running summary" in request["messages"][0]["content"]


def summary(request: dict[str, Any]) -> Step:
    """A summary line for each round the request is about (each player's text is "round N.")."""
    numbers = [part.split(".")[0] for part in request["messages"][1]["content"].split("Player: round ")[1:]]
    return reply("\n".join(f"Round {number}: Summary of round {number}." for number in numbers))


@pytest.mark.parametrize(
    ("content", "kept"),
    [
        ("", ""),
        (" \n\t ", ""),
        ("<think>The player picked a lock.</think>\n\n", ""),
        ("<thinking>Let me summarise this round", ""),  # never closed: it runs to the end
        ("<THINK>Hmm.</THINK> Mara picked the lock.", "Mara picked the lock."),
        ("Hmm, the lock.</think>Mara picked the lock.", "Mara picked the lock."),  # opened in the prompt
        ("Mara <think>aside</think>picked the lock.", "Mara picked the lock."),
        ("Mara sees <thinker> in a book.", "Mara sees <thinker> in a book."),  # not a reasoning tag
    ],
)
def test_reasoning_blocks_and_whitespace_are_not_a_summary(content: str, kept: str) -> None:
    assert summary_text(content) == kept


def test_an_answer_with_no_text_leaves_the_round_unremembered_until_a_later_round(
    store: Store, harbor: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # settle() after each round writes every round waiting, so each call asks for all rounds left so far
    memory: list[Any] = [
        reply(""),  # round 1, asked after round 1: an empty message
        call("remember", {"summary": "Mara picked the lock."}),  # rounds 1 and 2, after round 2: a tool call
        reply("<think>Mara picked the lock, so</think>  \n"),  # rounds 1 to 3, after round 3: only reasoning
        summary,  # rounds 1 to 4 at last, in one call
    ]

    async def play() -> Any:
        async with table(store, [reply(f"Narration {n}.") for n in range(1, 5)], memory) as t:
            story = t.game.start_story(harbor)
            seen = []
            for number in range(1, 5):
                await t.game.play(story, f"round {number}.")
                await t.game.settle()
                seen.append(
                    (
                        [entry.round_number for entry in store.memories(story)],
                        [r.number for r in store.unremembered(story)],
                    )
                )
            return t, story, seen

    with caplog.at_level(logging.WARNING, logger="gm.engine.game"):
        t, story, seen = run(play())
    assert seen == [([], [1]), ([], [1, 2]), ([], [1, 2, 3]), ([1, 2, 3, 4], [])]
    assert [entry.summary for entry in store.memories(story)] == [f"Summary of round {n}." for n in range(1, 5)]
    t.keeper.assert_done()
    warned = [record.getMessage() for record in caplog.records]
    assert any("for round 1 was an empty message" in line for line in warned)
    assert any("for rounds 1 to 2 was a tool call instead of text" in line for line in warned)
    assert any("for rounds 1 to 3 was reasoning with no summary after it" in line for line in warned)
    # the failed calls cost tokens too, so they are recorded
    assert len([c for c in store.model_calls(story) if c.purpose == "memory"]) == 4


def test_the_stored_summary_leaves_the_reasoning_out(store: Store, harbor: Path) -> None:
    async def play() -> Any:
        async with table(store, [reply("Fog.")], [reply("<think>Short.</think>\nMara waits in the fog.")]) as t:
            story = t.game.start_story(harbor)
            await t.game.play(story, "I wait.")
            return story

    [entry] = store.memories(run(play()))
    assert entry.summary == "Mara waits in the fog."


def test_a_fold_with_no_text_leaves_the_summaries_unfolded_until_a_later_round(store: Store, harbor: Path) -> None:
    folds: list[Step] = [reply(""), call("fold", {}), reply("FOLDED: Mara is inside the harbour office.")]

    def keeper(request: dict[str, Any]) -> Step:
        return folds.pop(0) if is_fold(request) else summary(request)

    rounds = FOLD_AFTER + 3

    async def play() -> Any:
        async with table(store, [reply(f"Narration {n}.") for n in range(1, rounds + 1)], keeper) as t:
            story = t.game.start_story(harbor)
            states = []
            for number in range(1, rounds + 1):
                await t.game.play(story, f"round {number}.")
                await t.game.settle()
                state = store.story(story)
                states.append((state.summary, state.summary_through))
            return story, states

    story, states = run(play())
    assert folds == []  # three folds were asked for: after rounds 9, 10 and 11
    assert states[: rounds - 1] == [("", 0)] * (rounds - 1)  # the two empty folds changed nothing
    summary_now, through = states[-1]
    assert summary_now == "FOLDED: Mara is inside the harbour office." and through > 0
    assert len(store.memories(story)) == rounds  # every round's own summary was kept meanwhile


def test_an_unexpected_failure_of_the_keeper_is_logged_and_its_rounds_wait(
    store: Store, harbor: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_arguments: Any) -> None:
        raise TypeError("a bug in the keeper's database work")

    async def play() -> Any:
        async with table(store, [reply("Narration 1.")], [summary, summary]) as t:  # settle, then the table's end
            monkeypatch.setattr(store, "add_memories", broken)
            story = t.game.start_story(harbor)
            await t.game.play(story, "round 1.")
            await t.game.settle()
            return story

    with caplog.at_level(logging.ERROR, logger="gm.engine.game"):
        story = run(play())
    [logged] = [record for record in caplog.records if record.levelno == logging.ERROR]
    assert "the memory keeper failed on story" in logged.getMessage() and logged.exc_info is not None
    assert "a bug in the keeper's database work" in str(logged.exc_info[1])
    assert [r.number for r in store.unremembered(story)] == [1]  # left for a later round, not lost
