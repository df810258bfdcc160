"""The record of each model call a round or the memory keeper makes, from what the model client measured."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from gm.engine.observe import observer
from gm.models.completion import Completion
from gm.store.records import ModelCall

if TYPE_CHECKING:
    from gm.engine.judge import JudgeCall


def model_call_from(completion: Completion, purpose: str, story_id: str = "") -> ModelCall:
    """The record of one model call: tokens, latency, HTTP attempts and how the answer ended (told to the
    engine's observer too, gm.engine.observe)."""
    usage = completion.usage
    observer().model_called(purpose, completion.latency_ms / 1000, usage.prompt_tokens, usage.completion_tokens)
    return ModelCall(
        story_id=story_id,
        purpose=purpose,
        prompt_tokens=completion.usage.prompt_tokens,
        completion_tokens=completion.usage.completion_tokens,
        estimated=completion.usage.estimated,
        latency_ms=completion.latency_ms,
        http_attempts=completion.attempts,
        finish_reason=completion.finish_reason,
        # Given here, not left to its default factory: pydantic inspects a factory's signature each time it
        # calls it for a default, a third of building this record (made for every model call, on the event loop).
        created_at=datetime.now(UTC),
    )


def judge_call(call: JudgeCall, purpose: str = "judge") -> ModelCall:
    """The record of one call to the judge (`purpose` "sheet_judge" for the sheet judge's), with how its answer
    was asked for."""
    record = model_call_from(call.completion, purpose)
    record.structured = call.mode
    return record
