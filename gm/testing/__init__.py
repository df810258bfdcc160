"""Scripted, OpenAI-compatible fake models for tests and offline rehearsal: over real HTTP, or in process.

`FakeModel` listens on 127.0.0.1 (an ephemeral port) in a daemon thread, so the real `openai`
client, sync or async, talks to it exactly as it would to a server. A script is a list of steps,
one used per chat completion request, or a function of the request (its parsed JSON body)
returning a step; a list may hold such functions too.

    from gm.testing import call, fake_model, http_error, reply

    with fake_model([http_error(429, "Slow down.", headers={"Retry-After": "1"}),
                     call("roll_check", {"check": "attempt", "character": "Mara"}),
                     reply("The lock clicks open.")]) as fake:
        client = fake.client()  # or fake.async_client(); both with the client's own retries off
        ...                     # fake.base_url and fake.model for anything else
    # leaving the block checks that every step was used and nothing went wrong (fake.assert_done())

Steps: `reply(text)`, `call(name, arguments)` (a dict is sent as JSON text, a string as is, so
malformed arguments can be sent), `calls([...], content=...)` for several tool calls in one
message, `length(text)` (finish_reason "length"), `http_error(status, message, ...)`, and
`raw(body)` for a response sent verbatim, unchecked, to imitate servers that bend the spec;
`slow(step, seconds)` delays any step.
Answers carry usage estimated at about 4 characters a token unless a step says `usage=None` (no
usage, as some local servers send) or `usage=(prompt, completion)`.

Every request body is kept in `fake.requests`. Given OpenAI's published JSON Schemas
(`request_schema=`, `response_schema=`), the fake answers an invalid request with 400 and the
reason, and refuses to send an invalid answer of its own (500: a bug in the script or the fake).
Such failures, a request after the script ran out, streaming requests and unknown paths are
recorded in `fake.failures`, which `assert_done()` reports along with any unused steps.
Only non-streaming `POST /v1/chat/completions` and `GET /v1/models` are served.

`FunctionModel(script)` is the same fake in process: a `ChatModel` (give it to `Game` in place of
a `ModelClient`) with no HTTP, for tests of the engine rather than of the model client. It keeps
the body `ModelClient` would send in `requests`, checks it and its own answer against the same
schemas, and returns the `Completion` the client would make of that answer. Its step functions
may also be `async def`, so a test can hold an answer until it is ready. It plays `reply`, `call`,
`calls`, `length` and `slow` steps; `http_error` and `raw` steps test the client, so they stay on
`FakeModel`. Where `FakeModel` answers with an error status, it raises `ScriptError` (an
AssertionError, which the engine does not catch), also recorded in `failures`.

What real servers send: `gm.testing.shapes` builds each server's documented answers (OpenAI, vLLM,
Ollama, llama.cpp's server, LM Studio, calls written as text, the quirks) as `raw` steps, and
`round_script(shape)` plays an honest round through one; `gm.testing.endpoint` is a whole fake
endpoint that takes tools natively or refuses them, for `gm model check`.

A fake judge (see `gm.engine.judge`): `honest_judge` reads every outcome as told as its roll came out;
`judge_answer(("Mara", "succeeded", "the lock gives"), ...)` gives chosen verdicts. Both answer as
the forced tool call when the request offers the judge's tool, else as JSON text.

>>> with fake_model([reply("Hello.")]) as fake:
...     answer = fake.client().chat.completions.create(model=fake.model, messages=[{"role": "user", "content": "Hi"}])
>>> answer.choices[0].message.content
'Hello.'
>>> import asyncio
>>> asyncio.run(FunctionModel([reply("Hello.")]).complete([{"role": "user", "content": "Hi"}])).content
'Hello.'
"""

from gm.errors import ScriptError
from gm.testing.function import FunctionModel
from gm.testing.judging import honest_judge, is_judge_request, is_sheet_judge_request, judge_answer, sheet_judge_answer
from gm.testing.script import (
    Answer,
    AnyScript,
    AnyStepFunction,
    Arguments,
    HttpError,
    Raw,
    Request,
    Script,
    Step,
    StepFunction,
    StepT,
    ToolCallStep,
    UsageSpec,
    call,
    calls,
    estimate_tokens,
    http_error,
    length,
    raw,
    reply,
    slow,
    tool_call,
)
from gm.testing.server import FakeModel, Response, fake_model

__all__ = [
    "Answer",
    "AnyScript",
    "AnyStepFunction",
    "Arguments",
    "FakeModel",
    "FunctionModel",
    "HttpError",
    "Raw",
    "Request",
    "Response",
    "Script",
    "ScriptError",
    "Step",
    "StepFunction",
    "StepT",
    "ToolCallStep",
    "UsageSpec",
    "call",
    "calls",
    "estimate_tokens",
    "fake_model",
    "honest_judge",
    "http_error",
    "is_judge_request",
    "is_sheet_judge_request",
    "judge_answer",
    "length",
    "raw",
    "reply",
    "sheet_judge_answer",
    "slow",
    "tool_call",
]
