"""What an HTTP failure from a model server means: whether retrying may help, the wait it asks for, and
its reason as part of one sentence for a person (see gm.model, which retries in one place)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import openai

from gm.textcalls import refuses_tools

RETRIED_STATUSES = frozenset({408, 409, 429})  # and every 5xx


def is_retryable(error: BaseException) -> bool:
    """Whether retrying may help: connection errors, timeouts, HTTP 408/409/429/5xx, but not an exhausted quota."""
    if isinstance(error, openai.APIConnectionError):
        return True
    if not isinstance(error, openai.APIStatusError):
        return False
    if "insufficient_quota" in (error.code, error.type):
        return False
    if refuses_tools(error.status_code, server_message(error)):
        return False  # llama.cpp's server says "tools param requires --jinja flag" with a 500: retrying cannot help
    return error.status_code in RETRIED_STATUSES or error.status_code >= 500


def retry_after_seconds(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """The wait a server asks for in `retry-after-ms` or `Retry-After` (seconds or an HTTP date), if any."""
    lowered = {name.lower(): value for name, value in headers.items()}
    try:
        if "retry-after-ms" in lowered:
            return max(0.0, float(lowered["retry-after-ms"]) / 1000)
    except ValueError:
        pass  # a malformed header is ignored, as if absent: Retry-After may still say
    value = lowered.get("retry-after", "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def reason(error: openai.APIError, timeout: float) -> str:
    """Why a request failed, as part of a sentence: a timeout, an HTTP status and message, a connection error."""
    if isinstance(error, openai.APITimeoutError):
        return f"no answer within {timeout:g} s"
    if isinstance(error, openai.APIStatusError):
        return f"HTTP {error.status_code} ({server_message(error)})"
    cause = error.__cause__
    return (
        f"a connection error ({sentence_part(str(cause) or type(cause).__name__)})" if cause else "a connection error"
    )


def server_message(error: openai.APIStatusError) -> str:
    """What the server said in its error answer, fit to sit inside a sentence."""
    body = error.body
    if isinstance(body, dict) and isinstance(body.get("message"), str) and body["message"].strip():
        return sentence_part(body["message"])
    text = error.response.text if body is None else str(body)
    return sentence_part(text) or "no reason given"


def sentence_part(text: str, limit: int = 300) -> str:
    """Text fit to sit inside one sentence: one line, no final full stop, not too long."""
    flat = " ".join(text.split()).rstrip(".")
    return flat if len(flat) <= limit else flat[: limit - 1] + "\u2026"
