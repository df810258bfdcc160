"""The tests' worlds: the harbour job (a world.json and a dice.json with two checks), and a small calendar.

bench/ plays the same harbour world, so that the benchmarks and the tests play one world."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

HARBOR_WORLD: dict[str, Any] = {
    "title": "The Harbour Job",
    "premise": "Salt-rotten Port Vey, where the harbour office keeps the ledgers that could free Mara's brother.",
    "instructions": "Keep it tense and wry. Short paragraphs.",
    "characters": [
        {
            "name": "Mara",
            "role": "player",
            "description": "A locksmith's daughter with quick hands.",
            "variables": {"skill": 3, "hometown": "Vey"},
        },
        {"name": "Jon", "role": "npc", "description": "A dockhand who owes Mara a favour.", "variables": {"skill": -1}},
        {"name": "The Warden", "role": "npc", "description": "Keeper of the harbour office.", "variables": {}},
    ],
}

HARBOR_DICE: dict[str, Any] = {
    "checks": [
        {
            "key": "attempt",
            "name": "Risky attempt",
            "use": "Any risky action whose outcome is in doubt; the target is its difficulty.",
            "dice": "1d20",
            "compare": "over",
            "modifier": "skill",
            "bands": [
                {"label": "Critical failure", "max": -10, "result": "failed", "critical": True},
                {"label": "Failure", "min": -9, "max": -1, "result": "failed"},
                {"label": "Partial success", "min": 0, "max": 4, "result": "partial"},
                {"label": "Success", "min": 5, "max": 9, "result": "succeeded"},
                {"label": "Critical success", "min": 10, "result": "succeeded", "critical": True},
            ],
        },
        {
            "key": "notice",
            "name": "Notice",
            "use": "Spotting what is hidden.",
            "dice": "2d6",
            "bands": [
                {"label": "Miss it", "max": 6, "result": "failed"},
                {"label": "Glimpse", "min": 7, "max": 9, "result": "partial"},
                {"label": "See it", "min": 10, "result": "succeeded"},
            ],
        },
    ]
}


def write_world(folder: Path, world: dict[str, Any] = HARBOR_WORLD, dice: dict[str, Any] | None = HARBOR_DICE) -> Path:
    """A world folder made of `world` as world.json and `dice` as dice.json (none when `dice` is None)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "world.json").write_text(json.dumps(world, indent=2))
    if dice is not None:
        (folder / "dice.json").write_text(json.dumps(dice, indent=2))
    return folder


# A small invented calendar: three months of 10, 12 and 8 days (30 a year), a week of 4 days.
CALENDAR: dict[str, Any] = {
    "months": [{"name": "Thaw", "days": 10}, {"name": "Bloom", "days": 12}, {"name": "Rime", "days": 8}],
    "weekdays": ["Oneday", "Twoday", "Threeday", "Fourday"],
    "era": "AL",
    "start": {"year": 311, "month": "Bloom", "day": 11, "time": "19:30", "weekday": "Threeday"},
    "parts_of_day": [
        {"name": "dawn", "from": "05:00"},
        {"name": "day", "from": "08:00"},
        {"name": "night", "from": "20:00"},
    ],
}


# A world whose sheets change (docs/sheets.md): Mara's hp, kit and state, Tomas's hp; a strike adds hp.
SHEET_WORLD: dict[str, Any] = {
    "title": "The Customs House",
    "premise": "A forger works the night shift at the customs house while a guard makes his rounds.",
    "characters": [
        {
            "name": "Mara",
            "role": "player",
            "description": "A forger.",
            "variables": {
                "hp": {"value": 10, "min": 0, "max": 10},
                "kit": {"items": ["wax", {"name": "lock picks", "count": 2}, {"name": "coins", "count": 5}]},
                "state": {"conditions": {"wounded": False, "soaked": False}},
                "nerve": 2,
            },
        },
        {
            "name": "Tomas",
            "role": "npc",
            "description": "The guard.",
            "variables": {"hp": {"value": 8, "min": 0, "max": 8}},
        },
    ],
}
SHEET_DICE: dict[str, Any] = {
    "checks": [
        {
            "key": "strike",
            "name": "Strike",
            "use": "a blow at someone",
            "dice": "1d20",
            "modifier": "hp",
            "bands": [
                {
                    "label": "Hit",
                    "result": "succeeded",
                    "min": 12,
                    "effects": [{"variable": "hp", "of": "opponent", "by": "-1d4"}],
                },
                {"label": "Miss", "result": "failed", "max": 11, "effects": [{"variable": "hp", "by": "-1d2"}]},
            ],
        }
    ]
}

# A shared table (gm.engine.table): the harbour job with two player characters, an initiative check and a secret one.
TABLE_WORLD: dict[str, Any] = {
    **HARBOR_WORLD,
    "characters": [
        *HARBOR_WORLD["characters"][:1],
        {
            "name": "Odile",
            "role": "player",
            "description": "A forger, neat as a ledger.",
            "variables": {"skill": 1},
        },
        *HARBOR_WORLD["characters"][1:],
    ],
}
TABLE_DICE: dict[str, Any] = {
    "checks": [
        *HARBOR_DICE["checks"],
        {
            "key": "initiative",
            "name": "Initiative",
            "use": "Who acts first in a fight.",
            "dice": "1d20",
            "modifier": "skill",
            "bands": [{"label": "Ready", "result": "succeeded"}],
        },
        {
            "key": "sense",
            "name": "Sense a lie",
            "use": "Whether a character reads a lie; the player does not see the dice.",
            "dice": "1d20",
            "secret": True,
            "bands": [
                {"label": "Fooled", "max": 10, "result": "failed"},
                {"label": "Sees through it", "min": 11, "result": "succeeded"},
            ],
        },
    ]
}


def write_table_world(folder: Path) -> Path:
    """The shared table's world folder."""
    return write_world(folder, TABLE_WORLD, TABLE_DICE)


NOTICE = {"check": "notice", "character": "Mara", "reason": "watch the clerk"}  # a roll of the world's second check


def secret_world(folder: Path) -> Path:
    """The harbour world with its second check (notice) made secret."""
    rules = copy.deepcopy(HARBOR_DICE)
    rules["checks"][1]["secret"] = True
    return write_world(folder, HARBOR_WORLD, rules)
