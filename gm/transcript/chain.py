"""The hash chain over a story's rolls: each roll stores the hash of the one before it.

A roll's hash is SHA-256 over its fields in the transcript's names (`gm.transcript.shapes.RollPublic`), written
as canonical JSON: the keys in `HASHED` and those of `HASHED_WHEN_SET` that are not null, sorted,
no spaces, UTF-8 (Python's `json.dumps(..., sort_keys=True, separators=(",", ":"),
ensure_ascii=False)`). `prev_hash` is one of the fields, so each hash covers the whole chain before
it. The first roll's `prev_hash` is the story's genesis,
SHA-256 of "gm-chain:" and the story's id, which ties the chain to its story. The story keeps the
number of rolls chained and the last hash (its head), so that dropping the newest roll is seen too.

Pure: no I/O. The store writes the links, the audit (`gm.integrity.audit`) checks them, from the database or
from an exported transcript alike.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

# Every field that says what a roll was; `check_name` (from dice.json) and `from_earlier_attempt`
# (from the round that uses the roll) are read from elsewhere, so they are not part of the roll itself.
HASHED = (
    "id",
    "seq",
    "round",
    "attempt",
    "kind",
    "character",
    "check",
    "notation",
    "reason",
    "target",
    "modifier",
    "faces",
    "total",
    "successes",
    "value",
    "band",
    "result",
    "critical",
    "void",
    "dice",
    "seed_epoch",
    "prev_hash",
)


# The table rules' fields (edge dice, opposed checks, naturals): hashed when set, and left out when null, so a
# roll that uses none of them hashes as it would without these fields, and a roll hashed before the table rules
# existed (where they are all null) keeps its hash.
HASHED_WHEN_SET = ("edge", "opponent", "opponent_modifier", "natural", "stepped_from")
# Hashed only when true (or non-empty), for the same reason: `typed` marks faces a player rolled at the
# table and typed in (gm.engine.typed_dice), and the hash covers that they were. `salt` is a secret roll's 128 random
# bits (gm.integrity.secret): without it, a sealed roll's hash would give its few possible faces away to anyone
# trying them all; with it, the hash commits to the roll and hides it.
HASHED_WHEN_TRUE = ("typed", "salt")


def genesis(story_id: str) -> str:
    """The `prev_hash` of a story's first roll."""
    return hashlib.sha256(f"gm-chain:{story_id}".encode()).hexdigest()


def canonical(roll: Mapping[str, Any]) -> bytes:
    """The bytes a roll's hash is taken over: its `HASHED` fields as canonical JSON."""
    fields = {name: roll.get(name) for name in HASHED}
    fields.update({name: roll[name] for name in HASHED_WHEN_SET if roll.get(name) is not None})
    fields.update({name: roll[name] for name in HASHED_WHEN_TRUE if roll.get(name)})
    return json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8", "surrogatepass"
    )  # a lone surrogate in a hand-made transcript hashes, rather than crashing


def roll_hash(roll: Mapping[str, Any]) -> str:
    """The hex SHA-256 of a roll (a mapping in the transcript's names, `prev_hash` included)."""
    return hashlib.sha256(canonical(roll)).hexdigest()


# A story's sheet changes (gm.world.sheet) are chained the same way, apart from its rolls: each change's
# `prev_hash` is the hash of the change before it, the first one's the story's sheet genesis. A round keeps the
# hash of the story's last change when it ended (`sheet_hash`), so a change removed from the end is seen too.
CHANGE_HASHED = (
    "seq",
    "round",
    "attempt",
    "character",
    "variable",
    "action",
    "amount",
    "item",
    "condition",
    "reason",
    "source",
    "roll",
    "before",
    "after",
    "clamped",
    "prev_hash",
)


def sheet_genesis(story_id: str) -> str:
    """The `prev_hash` of a story's first sheet change."""
    return hashlib.sha256(f"gm-sheet:{story_id}".encode()).hexdigest()


def change_hash(change: Mapping[str, Any]) -> str:
    """The hex SHA-256 of a sheet change (a mapping in the transcript's names, `prev_hash` included)."""
    fields = {name: change.get(name) for name in CHANGE_HASHED}
    encoded = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(encoded.encode("utf-8", "surrogatepass")).hexdigest()


def stored_change_hash(row: Any) -> str:
    """The hash of a sheet change as the store keeps it (`gm.store.records.SheetChangeRecord`'s attributes)."""
    return change_hash(
        {
            "seq": row.seq,
            "round": row.round_number,
            "attempt": row.attempt_id,
            "character": row.character,
            "variable": row.variable,
            "action": row.action,
            "amount": row.amount,
            "item": row.item,
            "condition": row.condition,
            "reason": row.reason,
            "source": row.source,
            "roll": row.roll_id,
            "before": row.before,
            "after": row.after,
            "clamped": row.clamped,
            "prev_hash": row.prev_hash,
        }
    )


# The chain of messages seats send (gm.store._seats): who said what, in order. Each message's hash covers its place,
# its seat, its character, its text and the hash before it, as canonical JSON like a roll's.
MESSAGE_HASHED = ("seq", "seat", "character", "text", "prev_hash")


def message_genesis(story_id: str) -> str:
    """The `prev_hash` of a story's first message."""
    return hashlib.sha256(f"gm-messages:{story_id}".encode()).hexdigest()


def message_hash(message: Mapping[str, Any]) -> str:
    """The hex SHA-256 of a message (a mapping with the `MESSAGE_HASHED` keys)."""
    fields = {name: message.get(name) for name in MESSAGE_HASHED}
    return hashlib.sha256(
        json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass")
    ).hexdigest()
