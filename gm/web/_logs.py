"""`gm serve`'s logs: lines for people (`text`, the default) or one JSON object per line (`json`).

A JSON line holds `time` (UTC, ISO 8601), `level`, `logger` and `message`; `story` and `round` when the line
was written while a round ran (gm.engine._in_flight.ROUND); the fields a line was given (`extra=`, such as the
drain's figures); and `error`, the traceback, for an error. Secrets never reach a line: the values of the
secret settings (`GM_API_TOKEN`, `GM_EDITOR_TOKEN`, `GM_METRICS_TOKEN`, the model keys) and whatever follows
`Bearer ` are replaced by `[secret]`, in every field. A line of uvicorn's is written the same way.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import sys
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from gm.config import LogFormat, Settings
from gm.engine._in_flight import ROUND

HIDDEN = "[secret]"
BEARER = re.compile(r"(?i)(bearer\s+)[^\s\"',;]+")
# The attributes every LogRecord has; any other was given by the line (`extra=`).
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime", "taskName"}


def secrets_of(settings: Settings) -> list[str]:
    """The values of the settings marked secret (gm.config), to keep out of the logs."""
    found = [getattr(settings, f.name) for f in dataclasses.fields(settings) if not f.repr]
    return [value for value in found if isinstance(value, str) and value]


class Hider:
    """Replaces the secrets and bearer tokens in a text."""

    def __init__(self, secrets: Iterable[str]) -> None:
        # Longest first, so none leaves a piece; a value under 4 characters is no secret worth garbling every line for.
        self.secrets = sorted({secret for secret in secrets if len(secret) >= 4}, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, HIDDEN)
        return BEARER.sub(lambda match: match.group(1) + HIDDEN, text)


class JsonLines(logging.Formatter):
    """One JSON object per record, on one line."""

    def __init__(self, hide: Hider) -> None:
        super().__init__()
        self.hide = hide

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": self.hide(record.getMessage()),
        }
        if (where := ROUND.get()) is not None:
            line.update(where)
        for name, value in vars(record).items():
            if name not in _STANDARD and name not in line and not name.startswith("color_"):
                line[name] = self._hidden(value)
        if record.exc_info:
            line["error"] = self.hide(self.formatException(record.exc_info))
        return json.dumps(line, ensure_ascii=False, default=str)

    def _hidden(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.hide(value)
        if isinstance(value, dict):
            return {key: self._hidden(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [self._hidden(item) for item in value]
        return value if isinstance(value, (int, float, bool)) or value is None else self.hide(str(value))


class TextLines(logging.Formatter):
    """A line for people: time, level, logger, the story and round where known, and the message (secrets hidden)."""

    def __init__(self, hide: Hider) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")
        self.hide = hide

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        if (where := ROUND.get()) is not None:
            text += " [" + " ".join(f"{key}={value}" for key, value in where.items()) + "]"
        return self.hide(text)


def configure_logging(log_format: LogFormat, settings: Settings) -> logging.Handler:
    """Send this process's log records (gm's from INFO, every other's from WARNING) to stderr in `log_format`."""
    hide = Hider(secrets_of(settings))
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLines(hide) if log_format == "json" else TextLines(hide))
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "gm_serve", False)]:
        root.removeHandler(old)
    handler.gm_serve = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    logging.getLogger("gm").setLevel(logging.INFO)
    return handler
