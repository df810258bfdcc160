"""The narration judge on its own: what counts as a contradiction, reading its answers, and finding
how a server lets it answer (json_schema, then a forced tool call, then text), over real HTTP."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest

from gm.engine.judge import FORMAT_NAME, Judge, Verdict, read_verdicts
from gm.engine.prompt import JudgedOutcome, JudgeRequest, judge_messages, read_judge_request
from gm.engine.referee import Refusal, Telling, judge_refusals
from gm.errors import JudgeFailed
from gm.models.client import ModelClient, ModelSettings, ToolsMode
from gm.rehearsal.model import rehearsal_verdict
from gm.testing import call, fake_model, http_error, reply

REQUEST = JudgeRequest(
    "Odile slips the lock open and steps inside. Bram keeps watch, half asleep.",
    (
        JudgedOutcome("Odile", "Lockwork and fine hands", "Failure", "failed"),
        JudgedOutcome("Bram", "Keep watch", "Glimpse", "partial", critical=False),
    ),
)


def verdicts(*items: tuple[str, str, str]) -> str:
    return json.dumps({"outcomes": [{"character": c, "told_as": t, "quote": q} for c, t, q in items]})


HONEST = verdicts(("Odile", "failed", "the pick snaps"), ("Bram", "partial", "half asleep"))


# What counts as a contradiction (the rules the README lists)


def telling(result: str, told_as: str, quote: str = "the lock gives with a click") -> Telling:
    return Telling("Odile", "Lockwork and fine hands", "Band", result, told_as, quote)  # type: ignore[arg-type]


def test_a_failure_told_as_a_success_is_refused_quoting_the_words() -> None:
    failed = Telling(
        "Odile", "Lockwork and fine hands", "Failure", "failed", "succeeded", "the lock gives with a click"
    )
    assert judge_refusals([failed]) == [
        Refusal(
            "the narration tells Odile's Lockwork and fine hands as a success ('the lock gives with a click'), "
            "but the roll failed (Failure); tell it as a failure",
            None,
            "Odile",
        )
    ]


@pytest.mark.parametrize(
    ("result", "told_as", "told_words", "rolled_words"),
    [
        ("partial", "succeeded", "a success", "was a partial success (Band); tell it as a partial success"),
        ("partial", "failed", "a failure", "was a partial success (Band); tell it as a partial success"),
        ("succeeded", "failed", "a failure", "succeeded (Band); tell it as a success"),
        ("failed", "partial", "a partial success", "failed (Band); tell it as a failure"),
    ],
)
def test_every_other_telling_of_a_result_is_refused(
    result: str, told_as: str, told_words: str, rolled_words: str
) -> None:
    [refusal] = judge_refusals([telling(result, told_as)])
    assert refusal.reason == (
        f"the narration tells Odile's Lockwork and fine hands as {told_words} ('the lock gives with a click'), "
        f"but the roll {rolled_words}"
    )


def test_an_outcome_the_narration_never_tells_is_refused() -> None:
    [refusal] = judge_refusals([telling("succeeded", "not_told", "")])
    assert refusal.reason == (
        "the narration never tells how Odile's Lockwork and fine hands turned out, "
        "but the roll succeeded (Band); tell it as a success"
    )


@pytest.mark.parametrize("result", ["succeeded", "partial", "failed"])
def test_a_telling_that_agrees_is_accepted_critical_or_not(result: str) -> None:
    plain = Telling("Odile", "Lockwork", "Critical success", result, result, "it opens")  # type: ignore[arg-type]
    assert judge_refusals([plain]) == []


def test_only_the_wrong_telling_of_two_is_refused() -> None:
    refusals = judge_refusals([telling("failed", "failed"), telling("partial", "succeeded")])
    assert [refusal.reason.split(",")[0] for refusal in refusals] == [
        "the narration tells Odile's Lockwork and fine hands as a success ('the lock gives with a click')"
    ]


# The judge's request and answer


def test_the_judge_is_told_names_bands_and_results_but_never_a_number() -> None:
    [system, user] = judge_messages(REQUEST)
    assert "told_as" in system["content"] and "not_told" in system["content"]
    assert read_judge_request(user["content"]) == REQUEST
    assert not any(character.isdigit() for character in user["content"])


def test_an_honest_answer_is_read_in_the_request_order() -> None:
    answer = verdicts(("bram", "partial", "half  asleep"), ("Odile", "failed", "the pick snaps"))
    assert read_verdicts(answer, REQUEST) == [
        Verdict("Odile", "failed", "the pick snaps"),
        Verdict("Bram", "partial", "half asleep"),  # names as asked; quotes on one line
    ]


def test_a_quote_is_kept_short_and_free_of_control_characters() -> None:
    answer = verdicts(("Odile", "failed", "the pick\u0000 snaps\u001b[2J" + "x" * 1000), ("Bram", "partial", ""))
    [odile, _] = read_verdicts(answer, REQUEST)
    assert odile.quote.startswith("the pick snaps[2J") and len(odile.quote) == 300
    assert "\x00" not in odile.quote and "\x1b" not in odile.quote


def test_reasoning_blocks_and_code_fences_around_the_answer_are_ignored() -> None:
    fenced = f"<think>The lock... {{not json}}</think>\nHere it is:\n```json\n{HONEST}\n```"
    assert [v.told_as for v in read_verdicts(fenced, REQUEST)] == ["failed", "partial"]
    unclosed = f"{HONEST}<think>cut off"
    assert [v.told_as for v in read_verdicts(unclosed, REQUEST)] == ["failed", "partial"]


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ("The narration is fine.", "it is not a JSON object"),
        ('{"verdicts": []}', 'it has no "outcomes" list'),
        (verdicts(("Odile", "failed", "x")), "it says nothing of Bram"),
        (verdicts(("Odile", "failed", "x"), ("Odile", "failed", "y")), "it names Odile twice"),
        (verdicts(("Odile", "failed", "x"), ("Bram", "fine", "y")), "told_as for Bram is 'fine'"),
        (verdicts(("Odile", "failed", "x"), ("Bram", "partial", "y"), ("Jon", "failed", "z")), "'Jon'"),
    ],
)
def test_a_malformed_or_incomplete_answer_says_what_is_wrong(answer: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        read_verdicts(answer, REQUEST)


def test_the_rehearsal_judge_reads_its_own_narration_lines() -> None:
    narration = (
        "(rehearsal) Odile tries: I pick the lock. Lockwork and fine hands: Failure (failed).\n"
        "(rehearsal) Failure is a critical band: the result stands."
    )
    assert rehearsal_verdict(narration, "Odile") == {
        "character": "Odile",
        "told_as": "failed",
        "quote": "Lockwork and fine hands: Failure (failed)",
    }
    assert rehearsal_verdict(narration, "Bram")["told_as"] == "not_told"


# Finding how the server lets the judge answer, over real HTTP


def judge_for(fake: Any, tools: ToolsMode = "auto") -> Judge:
    settings = ModelSettings(fake.base_url, "test-key", fake.model, max_attempts=1, tools=tools)
    return Judge(ModelClient(settings), fake.model)


def test_json_schema_is_asked_for_first_and_kept() -> None:
    with fake_model([reply(HONEST), reply(HONEST)]) as fake:
        judge = judge_for(fake)
        first = asyncio.run(judge.judge(REQUEST))
        second = asyncio.run(judge.judge(REQUEST))
    assert [call.mode for call in [*first.calls, *second.calls]] == ["json_schema", "json_schema"]
    response_format = fake.requests[0]["response_format"]
    assert response_format["type"] == "json_schema" and response_format["json_schema"]["strict"] is True
    assert [v.told_as for v in first.verdicts] == ["failed", "partial"]


def test_a_server_refusing_response_format_gets_one_forced_tool_call_and_keeps_to_it() -> None:
    tool_answer = call(FORMAT_NAME, json.loads(HONEST))
    with fake_model([http_error(400, "response_format is not supported"), tool_answer, tool_answer]) as fake:
        judge = judge_for(fake)
        first = asyncio.run(judge.judge(REQUEST))
        second = asyncio.run(judge.judge(REQUEST))
    assert [call.mode for call in [*first.calls, *second.calls]] == ["tool", "tool"]
    assert fake.requests[1]["tool_choice"] == {"type": "function", "function": {"name": FORMAT_NAME}}
    assert "response_format" not in fake.requests[1] and "response_format" not in fake.requests[2]
    assert [v.told_as for v in second.verdicts] == ["failed", "partial"]


def test_a_server_refusing_tools_too_gets_json_in_the_text() -> None:
    steps = [http_error(400, "response_format is not supported"), http_error(400, "tools are not supported")]
    with fake_model([*steps, reply(f"Sure:\n{HONEST}")]) as fake:
        judgement = asyncio.run(judge_for(fake, tools="native").judge(REQUEST))
    assert [call.mode for call in judgement.calls] == ["text"]
    assert "tools" not in fake.requests[2] and "response_format" not in fake.requests[2]


def test_with_tools_on_auto_a_server_refusing_tools_gets_the_verdict_as_a_prompted_call() -> None:
    steps = [http_error(400, "response_format is not supported"), http_error(400, "judge does not support tools")]
    verdicts = json.loads(HONEST)
    written = f'<tool_call>{{"name": "{FORMAT_NAME}", "arguments": {json.dumps(verdicts)}}}</tool_call>'
    with fake_model([*steps, reply(written)]) as fake:
        judgement = asyncio.run(judge_for(fake).judge(REQUEST))
    assert [call.mode for call in judgement.calls] == ["tool"]
    assert [v.told_as for v in judgement.verdicts] == ["failed", "partial"]
    prompted = fake.requests[2]
    assert "tools" not in prompted and "tool_choice" not in prompted
    assert f"Now call the tool {FORMAT_NAME}." in prompted["messages"][0]["content"]


def test_a_malformed_answer_is_asked_for_once_more_then_the_judge_fails() -> None:
    with fake_model([reply("Looks fine to me."), reply(HONEST)]) as fake:
        judgement = asyncio.run(judge_for(fake).judge(REQUEST))
    assert len(judgement.calls) == 2 and [v.told_as for v in judgement.verdicts] == ["failed", "partial"]
    assert "cannot be used: it is not a JSON object" in fake.requests[1]["messages"][-1]["content"]
    with (
        fake_model([reply("Looks fine to me."), reply('{"outcomes": []}')]) as fake,
        pytest.raises(JudgeFailed, match=re.escape("no usable verdict (it says nothing of Odile, Bram)")),
    ):
        asyncio.run(judge_for(fake).judge(REQUEST))
