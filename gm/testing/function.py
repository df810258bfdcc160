"""The scripted fake model in process: a `ChatModel` answered by a script, with no HTTP (see gm.testing)."""

from __future__ import annotations

import asyncio
import inspect
import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gm.errors import ScriptError
from gm.models.client import Completion, read_completion, request_options
from gm.testing.script import Answer, AnyScript, HttpError, Raw, Request, Scripted


class FunctionModel(Scripted):
    """A `ChatModel` answered in process by a script of the same steps as `FakeModel`; see gm.testing.

    Each `complete` builds the request body `ModelClient` would send (through JSON, so what JSON cannot
    carry fails here too), keeps it in `requests`, checks it against `request_schema`, takes the next
    step (a function of the request may be `async def`), checks the chat.completion it makes of the
    step against `response_schema`, and returns that answer as the `Completion` `ModelClient` would.
    """

    def __init__(
        self,
        script: AnyScript,
        *,
        model: str = "fake-model",
        request_schema: Path | str | None = None,
        response_schema: Path | str | None = None,
    ) -> None:
        super().__init__(script, model=model, request_schema=request_schema, response_schema=response_schema)
        self._ids = 0

    async def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
        response_format: Mapping[str, Any] | None = None,
    ) -> Completion:
        """The script's next answer as a Completion; raises ScriptError when it has none."""
        started = time.monotonic()
        options = request_options(self.model, messages, tools, tool_choice, response_format)
        try:
            request: Request = json.loads(json.dumps(options))
        except (TypeError, ValueError) as error:
            raise self._error(f"a request cannot be sent as JSON: {error}") from error
        number, invalid = self._record(request)
        if invalid:
            raise self._error(invalid)
        step = await self._take(request, number)
        if step.delay:
            await asyncio.sleep(step.delay)
        answer, broken = self._completion(step, request, number)
        if broken:
            raise self._error(broken)
        # Read as ModelClient reads a server's answer, so both paths share one reader.
        return read_completion(answer, options, round((time.monotonic() - started) * 1000), 1, self._new_id)

    async def _take(self, request: Request, number: int) -> Answer:
        item = self._next_item(number)
        if isinstance(item, str):
            raise self._error(item)
        step: Any = item
        if callable(item):
            try:
                step = item(request)
                if inspect.isawaitable(step):
                    step = await step
            except Exception as error:
                message = f"the script's function raised {type(error).__name__} for request {number}: {error}"
                raise self._error(message) from error
        if isinstance(step, HttpError | Raw):
            raise self._error(
                f"request {number} got {type(step).__name__.lower()} step {step!r}, which only FakeModel serves: "
                "it tests the model client over HTTP"
            )
        if not isinstance(step, Answer):
            raise self._error(
                f"the script's function returned {step!r} for request {number}, expected a step such as reply(...)"
            )
        return step

    def _new_id(self) -> str:
        self._ids += 1
        return f"call_fake_{self._ids}"

    def _error(self, message: str) -> ScriptError:
        return ScriptError(self._failed(message))
