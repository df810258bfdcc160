"""Writing world.json and dice.json: a stable, readable layout, written atomically, the previous file kept.

The layout is that of the docs' examples (docs/dice-json.md, docs/world-json.md): two-space indent, fields in
the reference's order, a band (and a character's variables, a natural) on one line (variables one per line when
some are a character sheet's), UTF-8 with a trailing
newline. Saving the sample worlds unchanged gives back their files byte for byte. A save writes a temporary file
in the same folder, flushes and syncs it, copies the file it replaces to `<name>.bak`, then renames the new file
into place, so the file is never missing or half-written and the previous version is always on disk. A save
never writes through a symbolic link or to anything but a regular file, never replaces a file that changed on
disk since its form was opened (`file_version`), and removes what killed saves left behind.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
import time
from pathlib import Path
from typing import Any

from gm.errors import StaleFile, UnsafeTarget
from gm.problems import MAX_FILE_BYTES, read_regular

CHECK_ORDER = (
    "key",
    "name",
    "use",
    "dice",
    "advantage",
    "disadvantage",
    "reading",
    "hit",
    "compare",
    "modifier",
    "secret",
    "naturals",
    "bands",
)
NATURAL_ORDER = ("face", "sides", "step", "band")
BAND_ORDER = ("label", "min", "max", "result", "critical", "effects")
WORLD_ORDER = ("title", "premise", "instructions", "characters", "calendar")
CALENDAR_ORDER = ("months", "weekdays", "era", "start", "parts_of_day")
START_ORDER = ("year", "month", "day", "time", "weekday")
CHARACTER_ORDER = ("name", "role", "description", "variables")
BOUNDED_ORDER = ("value", "min", "max")
ITEM_ORDER = ("name", "count")
BACKUP_SUFFIX = ".bak"
NEW_FILE_MODE = 0o644  # mkstemp makes files private; a world file is as readable as its folder


def dice_text(data: dict[str, Any]) -> str:
    """dice.json's text for validated `data`, in the reference layout."""
    lines = ["{"]
    members = _ordered(data, ("$schema", "checks"))
    for number, (name, value) in enumerate(members):
        comma = "," if number < len(members) - 1 else ""
        if name == "checks" and isinstance(value, list):
            lines.append(f"  {_j(name)}: " + _block(value, 2, _check_lines) + comma)
        else:
            lines.append(f"  {_j(name)}: {_j(value)}{comma}")
    return "\n".join([*lines, "}"]) + "\n"


def world_text(data: dict[str, Any]) -> str:
    """world.json's text for validated `data`, in the reference layout."""
    lines = ["{"]
    members = _ordered(data, ("$schema", *WORLD_ORDER))
    for number, (name, value) in enumerate(members):
        comma = "," if number < len(members) - 1 else ""
        if name == "characters" and isinstance(value, list):
            lines.append(f"  {_j(name)}: " + _block(value, 2, _character_lines) + comma)
        elif name == "calendar" and isinstance(value, dict):
            lines.append(f"  {_j(name)}: " + "\n".join(_calendar_lines(value, 2)) + comma)
        else:
            lines.append(f"  {_j(name)}: {_j(value)}{comma}")
    return "\n".join([*lines, "}"]) + "\n"


def _calendar_lines(calendar: dict[str, Any], indent: int) -> list[str]:
    """The calendar: one month, and one part of the day, per line; the weekdays and the start on one line each."""
    pad = " " * (indent + 2)
    members = _ordered(calendar, CALENDAR_ORDER)
    lines = ["{"]
    for number, (name, value) in enumerate(members):
        comma = "," if number < len(members) - 1 else ""
        if name in ("months", "parts_of_day") and isinstance(value, list):
            order = ("name", "days") if name == "months" else ("name", "from")
            rows = _block(value, indent + 2, lambda row, _, order=order: [_j(_ordered_dict(row, order))])
            lines.append(f"{pad}{_j(name)}: {rows}{comma}")
        else:
            lines.append(
                f"{pad}{_j(name)}: {_j(_ordered_dict(value, START_ORDER) if name == 'start' else value)}{comma}"
            )
    return [*lines, " " * indent + "}"]


def _check_lines(check: Any, indent: int) -> list[str]:
    if not isinstance(check, dict):
        return [_j(check)]
    pad = " " * (indent + 2)
    members = _ordered(check, CHECK_ORDER)
    lines = ["{"]
    for number, (name, value) in enumerate(members):
        comma = "," if number < len(members) - 1 else ""
        if name in ("bands", "naturals") and isinstance(value, list):
            order = BAND_ORDER if name == "bands" else NATURAL_ORDER
            items = _block(value, indent + 2, lambda item, _, order=order: [_j(_ordered_dict(item, order))])
            lines.append(f"{pad}{_j(name)}: {items}{comma}")
        else:
            lines.append(f"{pad}{_j(name)}: {_j(value)}{comma}")
    return [*lines, " " * indent + "}"]


def _character_lines(character: Any, indent: int) -> list[str]:
    if not isinstance(character, dict):
        return [_j(character)]
    pad = " " * (indent + 2)
    members = _ordered(character, CHARACTER_ORDER)
    lines = ["{"]
    for number, (name, value) in enumerate(members):
        comma = "," if number < len(members) - 1 else ""
        if name == "variables" and isinstance(value, dict) and any(isinstance(item, dict) for item in value.values()):
            lines.append(f"{pad}{_j(name)}: " + "\n".join(_variables_lines(value, indent + 2)) + comma)
        else:
            lines.append(f"{pad}{_j(name)}: {_j(value)}{comma}")
    return [*lines, " " * indent + "}"]


def _variables_lines(variables: dict[str, Any], indent: int) -> list[str]:
    """A character's variables when some are a sheet's: one variable per line, a bounded number's parts in order."""
    pad = " " * (indent + 2)
    lines = ["{"]
    for number, (name, value) in enumerate(variables.items()):
        comma = "," if number < len(variables) - 1 else ""
        lines.append(f"{pad}{_j(name)}: {_j(_sheet_value(value))}{comma}")
    return [*lines, " " * indent + "}"]


def _sheet_value(value: Any) -> Any:
    if isinstance(value, dict) and isinstance(value.get("items"), list):
        return {**value, "items": [_ordered_dict(item, ITEM_ORDER) for item in value["items"]]}
    if isinstance(value, dict) and "value" in value:
        return _ordered_dict(value, BOUNDED_ORDER)
    return value


def _block(items: list[Any], indent: int, render: Any) -> str:
    """A JSON list with one item (rendered by `render(item, indent)`) per line group, indented under its key."""
    if not items:
        return "[]"
    pad = " " * (indent + 2)
    parts = []
    for number, item in enumerate(items):
        item_lines: list[str] = render(item, indent + 2)
        comma = "," if number < len(items) - 1 else ""
        parts.append(pad + "\n".join(item_lines) + comma)
    return "[\n" + "\n".join(parts) + "\n" + " " * indent + "]"


def _ordered(data: dict[str, Any], order: tuple[str, ...]) -> list[tuple[str, Any]]:
    """Members in the reference's order; any others after them, as they came."""
    known = [(name, data[name]) for name in order if name in data]
    return known + [(name, value) for name, value in data.items() if name not in order]


def _ordered_dict(data: Any, order: tuple[str, ...]) -> Any:
    return dict(_ordered(data, order)) if isinstance(data, dict) else data


def _j(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def check_target(path: Path) -> None:
    """Refuse to write to `path` unless it is missing or a regular file that is not a symbolic link.

    A link could lead anywhere (and the backup would copy what it points at); a FIFO would hang the save.
    """
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISLNK(mode):
        raise UnsafeTarget(f"{path.name} in this world is a symbolic link, which the editor does not follow.")
    if not stat.S_ISREG(mode):
        raise UnsafeTarget(f"{path.name} in this world is not a regular file (a FIFO, a device or a socket).")


def file_version(path: Path) -> str:
    """A short fingerprint of the file's content ("" when there is none), for a form to carry and compare."""
    check_target(path)
    try:
        content = read_regular(path, MAX_FILE_BYTES)
    except FileNotFoundError:
        return ""
    return hashlib.sha256(content).hexdigest()[:16]


def save_text(path: Path, text: str, version: str | None = None) -> bool:
    """Write `text` to `path` atomically, keeping the file it replaces as `<name>.bak`.

    With `version` (from `file_version` when the form was opened), a file changed on disk since is not
    replaced: `StaleFile`. A symbolic link or anything but a regular file is `UnsafeTarget`. Returns
    False, writing nothing, when the file already holds exactly this text, so that the backup always
    holds the version before the last real change. Temporary files left by a save that was killed
    are removed first (`sweep_temporaries`).
    """
    check_target(path)
    data = text.encode("utf-8")
    if version is not None and (current := file_version(path)) != version:
        raise StaleFile(current)
    if path.exists() and read_regular(path, MAX_FILE_BYTES) == data:
        return False
    folder = path.parent
    sweep_temporaries(folder)
    mode = path.stat().st_mode & 0o777 if path.exists() else NEW_FILE_MODE
    descriptor, temporary = tempfile.mkstemp(prefix=_temporary_prefix(path), suffix=".tmp", dir=folder)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        if path.exists():
            _backup(path)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    _sync_folder(folder)
    return True


def backup_path(path: Path) -> Path:
    """Where the version of `path` before the last save is kept."""
    return path.with_name(path.name + BACKUP_SUFFIX)


def _temporary_prefix(path: Path) -> str:
    """Temporary files are named `.<name>.<pid>.<random>.tmp`, so a sweep can tell whose they are."""
    return f".{path.name}.{os.getpid()}."


_TEMPORARY = re.compile(r"^\.(?:world|dice)\.json\.(?:(\d+)\.)?[^/]*\.tmp$")
STALE_TEMPORARY_SECONDS = 3600  # a temporary file whose process cannot be told: left this long, it is stale


def sweep_temporaries(folder: Path) -> list[str]:
    """Remove the temporary files of saves killed before they finished (`kill -9`, a power cut); their names.

    A save writes `.world.json.<pid>.<random>.tmp` and renames it into place at once, so such a file
    outlives its save only when the save's process died: one whose process is gone is removed, and any
    once it is an hour old (an older name, a process of another machine sharing the folder, a process
    id used again). A younger file of a process still running is left alone: it may be mid-save.
    """
    removed = []
    now = time.time()
    for entry in os.scandir(folder):
        match = _TEMPORARY.match(entry.name)
        if match is None or not entry.is_file(follow_symlinks=False):
            continue
        owner = int(match.group(1)) if match.group(1) else None
        old = now - entry.stat(follow_symlinks=False).st_mtime > STALE_TEMPORARY_SECONDS  # no save takes an hour
        if old or (owner is not None and not _running(owner)):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.path)
                removed.append(entry.name)
    return removed


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def _backup(path: Path) -> None:
    """Copy `path` to its backup through a temporary file, so a backup is never half-written either."""
    descriptor, temporary = tempfile.mkstemp(prefix=_temporary_prefix(path), suffix=".bak.tmp", dir=path.parent)
    os.close(descriptor)
    try:
        shutil.copy2(path, temporary)
        with open(temporary, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(temporary, backup_path(path))
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def _sync_folder(folder: Path) -> None:
    """Make the rename itself durable where the platform allows opening a folder."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)
