"""`gm model check`: what an endpoint can do, found with a handful of tiny requests, and how gm will use it.

The probes, each one request without retries: `GET /models` (reachability, latency, the models
listed, where the server has the route); one tiny native tool call; where that does not work, the
same call prompted (the tools described in the text); one `json_schema` structured answer (what
the judge asks for first). Every answer is also looked at for reasoning. The report ends with the
settings gm will use: the tools mode (`--tools`), and how the judge will ask for its verdicts.

gm can play when the server answers and tool calls work one way or the other; otherwise the
report's `problem` is one sentence saying what to change.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from gm.config import proxy_for
from gm.errors import ModelError, ModelRequestRejected
from gm.models._transport import ConnectionFailure, Endpoint, StatusFailure, TimedOut
from gm.models.client import ModelClient, ModelSettings

PROBE_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "roll_dice",
        "description": "Roll dice in dice notation such as 1d20.",
        "parameters": {
            "type": "object",
            "properties": {"notation": {"type": "string"}, "reason": {"type": "string"}},
            "required": ["notation", "reason"],
            "additionalProperties": False,
        },
    },
}
PROBE_MESSAGES = [
    {"role": "system", "content": "You test tool calling. Answer only by calling the tool you are given."},
    {"role": "user", "content": "Roll 1d20 with the roll_dice tool, for the reason 'a test'."},
]
PROBE_FORMAT: dict[str, Any] = {
    "type": "json_schema",
    "json_schema": {
        "name": "probe",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {"answer": {"type": "string"}},
            "required": ["answer"],
            "additionalProperties": False,
        },
    },
}
FORMAT_MESSAGES = [{"role": "user", "content": 'Answer with the JSON object {"answer": "yes"} and nothing else.'}]
Outcome = Literal["works", "as text", "refused", "not called", "failed", "not tried"]


@dataclass
class Report:
    """What `gm model check` found; `problem` is empty when gm can play on the endpoint."""

    base_url: str
    model: str
    reachable: bool = False
    latency_ms: int | None = None
    models: list[str] | None = None  # None: the server has no /models
    native: Outcome = "not tried"
    prompted: Outcome = "not tried"
    structured: Outcome = "not tried"
    reasoning: bool = False
    tools: str = ""  # the --tools mode gm will use
    judge: str = ""  # how the judge will ask for its verdicts
    details: dict[str, str] = field(default_factory=dict)  # what a server said, one line each
    problem: str = ""


async def check_model(settings: ModelSettings, timeout: float = 60.0) -> Report:
    """Probe the endpoint in `settings` (each request at most `timeout` seconds, none retried)."""
    settings = replace(settings, timeout=timeout, max_attempts=1)
    report = Report(settings.base_url or "https://api.openai.com/v1", settings.model)
    await _models(settings, report)
    if not report.reachable:
        return report
    report.native = await _tool_probe(replace(settings, tools="native"), report, "native")
    if report.problem:
        return report
    if report.native not in ("works", "as text") or settings.tools == "prompted":
        report.prompted = await _tool_probe(replace(settings, tools="prompted"), report, "prompted")
    report.structured = await _structured(settings, report)
    _conclude(settings, report)
    return report


async def _models(settings: ModelSettings, report: Report) -> None:
    endpoint = Endpoint(
        report.base_url,
        settings.api_key,
        settings.timeout,
        organization=settings.organization,
        project=settings.project,
        proxy=proxy_for(report.base_url),
    )
    started = time.monotonic()
    try:
        listed = json.loads(await endpoint.get("/models"))
        report.reachable = True  # it answered
        names = (model.get("id") if isinstance(model, dict) else None for model in listed["data"])
        report.models = sorted(printable(name) for name in names if isinstance(name, str))
    except StatusFailure as error:
        report.reachable = True  # it answered; it just has no /models
        report.details["models"] = f"HTTP {error.status}"
    except ConnectionFailure as error:
        _unreachable(report, error)
    except (ValueError, TypeError, KeyError, RecursionError) as error:  # it answered, with something that is no list
        report.reachable = True
        report.details["models"] = printable(f"no model list: {type(error).__name__}")
    finally:
        await endpoint.aclose()
    report.latency_ms = round((time.monotonic() - started) * 1000)


def _unreachable(report: Report, error: ConnectionFailure) -> None:
    report.details["reachable"] = printable(str(error))
    what = "did not answer in time" if isinstance(error, TimedOut) else "cannot be reached"
    report.problem = (
        f"the server at {report.base_url} {what} ({report.details['reachable']}); start it, or point "
        "--base-url (or OPENAI_BASE_URL) at where it listens"
    )


async def _tool_probe(settings: ModelSettings, report: Report, mode: str) -> Outcome:
    try:
        async with ModelClient(settings) as client:
            done = await client.complete(PROBE_MESSAGES, tools=[PROBE_TOOL])
    except ModelRequestRejected as rejected:
        report.details[mode] = printable(rejected.server_message)
        if rejected.status == 404:
            report.problem = _no_such_model(report)
        return "refused" if rejected.tools_refused else "failed"
    except ModelError as error:
        report.details[mode] = printable(str(error))
        return "failed"
    report.reasoning = report.reasoning or done.reasoning
    if not any(call.name == "roll_dice" for call in done.tool_calls):
        report.details[mode] = printable(f"answered: {(done.content or '')[:80]!r}")
        return "not called"
    return "as text" if done.written_calls and mode == "native" else "works"


async def _structured(settings: ModelSettings, report: Report) -> Outcome:
    try:
        async with ModelClient(settings) as client:
            done = await client.complete(FORMAT_MESSAGES, response_format=PROBE_FORMAT)
    except ModelRequestRejected as rejected:
        report.details["structured"] = printable(rejected.server_message)
        return "refused" if rejected.status in (400, 422) else "failed"
    except ModelError as error:
        report.details["structured"] = printable(str(error))
        return "failed"
    report.reasoning = report.reasoning or done.reasoning
    try:
        answer = json.loads(done.content or "")
    except ValueError:
        answer = None
    if isinstance(answer, dict) and isinstance(answer.get("answer"), str):
        return "works"
    report.details["structured"] = printable(f"answered: {(done.content or '')[:80]!r}")
    return "failed"


def _conclude(settings: ModelSettings, report: Report) -> None:
    """The settings gm will use, and what to change if it cannot play."""
    native_ok = report.native in ("works", "as text")
    prompted_ok = report.prompted == "works"
    if settings.tools == "native" and not native_ok:
        report.tools = "native"
        report.problem = (
            "tool calls do not work natively here; use --tools prompted (or GM_TOOLS=prompted), or --tools auto"
            if prompted_ok
            else _no_tools_problem(report)
        )
    elif settings.tools == "prompted":
        report.tools = "prompted"
        if not prompted_ok:
            report.problem = (
                "the model wrote no usable tool call in text; use --tools native (or auto)"
                if native_ok
                else _no_tools_problem(report)
            )
    elif native_ok:
        report.tools = f"{settings.tools} (native)" if settings.tools == "auto" else "native"
    elif prompted_ok:
        report.tools = f"{settings.tools} (prompted)"
    else:
        report.tools = settings.tools
        report.problem = _no_tools_problem(report)
    # The judge asks by json_schema unless the server refuses it, then by a forced tool call, then for text.
    if report.structured != "refused":
        report.judge = "json_schema"
    elif native_ok or (prompted_ok and report.tools != "native"):
        report.judge = "tool"
    else:
        report.judge = "text"


def _no_tools_problem(report: Report) -> str:
    if report.native == "failed" and report.prompted in ("failed", "not tried"):
        return (
            f"the model did not answer the probe ({report.details.get('native', 'no reason given')}); check that "
            "the server is serving it (its log says why), then check again"
        )
    if report.native == "refused":
        return (
            "the server refuses tools and the model wrote no usable call in text either; start the server with its "
            "tool-call flags (see the README's compatibility table) or use a model trained for tool calls"
        )
    return (
        "the model made no tool call, natively or in text; use a model trained for tool calls, or start the "
        "server with its tool-call flags (see the README's compatibility table)"
    )


def _no_such_model(report: Report) -> str:
    listed = f" (it lists {', '.join(report.models[:8])})" if report.models else ""
    return f"the server refused model '{report.model}'{listed}; set --model (or GM_MODEL) to one it serves"


OUTCOME_WORDS = {
    "works": "work",
    "as text": "work, written as text (gm reads them)",
    "refused": "refused by the server",
    "not called": "the model did not call the tool",
    "failed": "failed",
    "not tried": "not needed",
}


def render(report: Report) -> str:
    """The report as lines for a terminal."""
    lines = [f"gm model check: {report.base_url}, model {printable(report.model)}"]

    def row(label: str, value: str, detail: str = "") -> None:
        lines.append(f"  {label:<22}{value}" + (f" ({detail})" if detail else ""))

    latency = f"yes, {report.latency_ms} ms" if report.reachable else "no"
    row("reachable:", latency, report.details.get("reachable", ""))
    if report.reachable:
        models = ", ".join(report.models) if report.models else "(none)"
        row("models listed:", models if report.models is not None else "no /models", report.details.get("models", ""))
        row("native tool calls:", OUTCOME_WORDS[report.native], report.details.get("native", ""))
        row("prompted tool calls:", OUTCOME_WORDS[report.prompted], report.details.get("prompted", ""))
        structured = {"works": "works (json_schema)", "not tried": "not tried"}.get(
            report.structured, OUTCOME_WORDS[report.structured]
        )
        row("structured output:", structured, report.details.get("structured", ""))
        row("reasoning blocks:", "seen (gm drops them)" if report.reasoning else "none seen")
    if report.tools:
        row("gm will use:", f"--tools {report.tools}; the judge asks by {report.judge}")
    lines.append("gm can play on this endpoint." if not report.problem else "gm cannot play on this endpoint yet.")
    return "\n".join(lines)


def printable(text: str, limit: int = 200) -> str:
    """Server text fit for a terminal: no control characters, one line, not too long."""
    flat = " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "\u2026"
