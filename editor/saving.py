"""Writing world.json and dice.json: a stable, readable layout, written atomically, the previous file kept.

The layout is the README's: two-space indent, fields in the reference's order, a band (and a
character's variables, a natural) on one line, UTF-8 with a trailing newline. Saving the sample worlds unchanged
gives back their files byte for byte. A save writes a temporary file in the same folder, flushes and
syncs it, copies the file it replaces to `<name>.bak`, then renames the new file into place, so the
file is never missing or half-written and the previous version is always on disk.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

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
    "naturals",
    "bands",
)
NATURAL_ORDER = ("face", "sides", "step", "band")
BAND_ORDER = ("label", "min", "max", "result", "critical")
WORLD_ORDER = ("title", "premise", "instructions", "characters")
CHARACTER_ORDER = ("name", "role", "description", "variables")
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
        else:
            lines.append(f"  {_j(name)}: {_j(value)}{comma}")
    return "\n".join([*lines, "}"]) + "\n"


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
        lines.append(f"{pad}{_j(name)}: {_j(value)}{comma}")
    return [*lines, " " * indent + "}"]


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


def save_text(path: Path, text: str) -> bool:
    """Write `text` to `path` atomically, keeping the file it replaces as `<name>.bak`.

    Returns False, writing nothing, when the file already holds exactly this text, so that the
    backup always holds the version before the last real change.
    """
    data = text.encode("utf-8")
    if path.exists() and path.read_bytes() == data:
        return False
    folder = path.parent
    mode = path.stat().st_mode & 0o777 if path.exists() else NEW_FILE_MODE
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
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


def _backup(path: Path) -> None:
    """Copy `path` to its backup through a temporary file, so a backup is never half-written either."""
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".bak.tmp", dir=path.parent)
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
