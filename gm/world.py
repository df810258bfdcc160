"""A world on disk: a folder holding world.json and maybe dice.json, or a dice.json given directly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gm.jsonfile import read_json
from gm.problems import Problem, ProblemsError
from gm.rules import Rules, parse_rules, validate

DICE_FILE = "dice.json"


def dice_json_path(path: Path) -> Path:
    """The dice.json meant by `path`: the file itself, or the one inside a world folder."""
    if path.is_dir():
        candidate = path / DICE_FILE
        if not candidate.exists():
            raise ProblemsError(str(path), [Problem("$", f"the folder has no {DICE_FILE}")])
        return candidate
    return path


def read_dice_json(path: Path) -> tuple[Any, list[Problem]]:
    """The raw dice.json at `path` (file or world folder) and every problem in it."""
    data = read_json(dice_json_path(path))
    return data, validate(data)


def load_rules(path: Path) -> Rules:
    """The validated rules of a dice.json file or world folder, or `ProblemsError` with every error."""
    target = dice_json_path(path)
    return parse_rules(read_json(target), str(target))
