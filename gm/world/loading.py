"""A world on disk: a folder holding world.json and maybe dice.json, or a dice.json given directly.

This module only reads files; what the files mean and how they are checked is `gm.world.definition` (and
`gm.rules.checks` for dice.json), which do no I/O. A path names a world folder, the world.json in one, or
a dice.json file by any name. A file that cannot be read or parsed stops the check: its problems
(with line and column for a syntax error) come as a `ProblemsError`, from both files at once.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gm._lru import LRU
from gm.errors import ProblemsError
from gm.problems import Problem, read_json, read_regular
from gm.rules.checks import Rules
from gm.rules.validation import parse_rules, validate
from gm.world.definition import DICE_FILE, WORLD_FILE, World, validate_world, world_from_data


@dataclass(frozen=True, slots=True)
class WorldFiles:
    """The files a path means: world.json and dice.json, None where there is none."""

    world: Path | None
    dice: Path | None

    @property
    def names(self) -> list[str]:
        return [path.name for path in (self.world, self.dice) if path is not None]


def world_files(path: Path) -> WorldFiles:
    """The world.json and dice.json meant by `path`: a world folder, its world.json, or a dice.json file.

    Raises `ProblemsError` for a folder holding neither file.
    """
    if path.is_dir():
        world, rules = path / WORLD_FILE, path / DICE_FILE
        if not world.exists() and not rules.exists():
            raise ProblemsError(str(path), [Problem("$", f"the folder has no {WORLD_FILE} and no {DICE_FILE}")])
        return WorldFiles(world if world.exists() else None, rules if rules.exists() else None)
    if path.name == WORLD_FILE:
        rules = path.parent / DICE_FILE
        return WorldFiles(path, rules if rules.exists() else None)
    return WorldFiles(None, path)


def check_world(path: Path) -> list[Problem]:
    """Every problem in the world (or lone dice.json) at `path`, world.json's first, warnings included.

    In a world folder each problem names its file; for a lone dice.json file, `file` is None.
    Raises `ProblemsError` when a file cannot be read or parsed.
    """
    files = world_files(path)
    if files.world is None and not path.is_dir():
        return validate(read_json(path))
    world_data, dice_data = _read(files, path)
    if world_data is None:  # a folder with dice.json only: there are no characters to try it with
        return [replace(problem, file=DICE_FILE) for problem in validate(dice_data)]
    return validate_world(world_data, dice_data)


def load_world(path: Path) -> World:
    """The validated world in the folder `path` (or of the world.json `path`), with its dice rules.

    Raises `ProblemsError` listing every error in world.json and dice.json, each with its file.
    """
    files = world_files(path)
    if files.world is None:
        what = "the folder has no" if path.is_dir() else "this is not a world: expected a world folder or its"
        raise ProblemsError(str(path), [Problem("$", f"{what} {WORLD_FILE}")])
    world_data, dice_data = _read(files, path)
    return world_from_data(world_data, dice_data, str(path))


class LoadedWorlds:
    """Worlds loaded from folders and kept by their files' content, so a server starting many stories checks each once.

    Checking a world (its schema, its rules, its checks against its characters) takes about 15 ms of
    CPU, and `gm serve` loaded the world anew for every story it started. `load` reads the files
    again each time (a few KB, as `load_world` does, FIFOs refused) and checks them only when their
    bytes differ from the last ones seen for that path, so an edited world is taken at once and a
    broken one is refused with its problems, as before. A World is shared by every story played in
    it (`gm.world.shared`), so handing out one object is safe. At most `size` worlds are kept.
    """

    def __init__(self, size: int = 64) -> None:
        self._worlds: LRU[tuple[str, bytes], World] = LRU(size)

    def load(self, path: Path) -> World:
        """`load_world(path)`, from the cache when its files hold the bytes they held when it was last loaded."""
        key = _content_key(path)
        world = self._worlds.get(key) if key is not None else None
        if world is None:
            world = load_world(path)
            if key is not None and _content_key(path) == key:  # not changed while it was read: keep it
                self._worlds.put(key, world)
        return world


def _content_key(path: Path) -> tuple[str, bytes] | None:
    """The path with a digest of its world files' bytes; None when they cannot be read (`load_world` says why)."""
    try:
        files = world_files(path)
        digest = hashlib.sha256()
        for file in (files.world, files.dice):
            content = b"" if file is None else read_regular(file)
            digest.update(len(content).to_bytes(8, "big") + content)
    except (OSError, ProblemsError):
        return None
    return str(path), digest.digest()


def _read(files: WorldFiles, path: Path) -> tuple[Any, Any]:
    """The parsed world.json and dice.json (None if absent); problems reading either are raised together."""
    found: list[Problem] = []
    parsed: list[Any] = []
    for file in (files.world, files.dice):
        if file is None:
            parsed.append(None)
            continue
        try:
            parsed.append(read_json(file))
        except ProblemsError as error:
            found.extend(replace(problem, file=file.name) for problem in error.problems)
            parsed.append(None)
    if found:
        raise ProblemsError(str(path), found)
    return parsed[0], parsed[1]


def dice_json_path(path: Path) -> Path:
    """The dice.json meant by `path`: the file itself, or the one beside world.json or in a world folder."""
    files = world_files(path)
    if files.dice is None:
        raise ProblemsError(str(path), [Problem("$", f"the world has no {DICE_FILE}, so it has no checks")])
    return files.dice


def read_dice_json(path: Path) -> tuple[Any, list[Problem]]:
    """The raw dice.json at `path` (file or world folder) and every problem in it."""
    data = read_json(dice_json_path(path))
    return data, validate(data)


def load_rules(path: Path) -> Rules:
    """The validated rules of a dice.json file or world folder, or `ProblemsError` with every error."""
    target = dice_json_path(path)
    return parse_rules(read_json(target), str(target))
