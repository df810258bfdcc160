"""One World object for every story of the same world, found by a digest of the definitions it was built from.

A story copies its world's definitions in when it starts, and a Game keeps each story's built World
(`gm.engine.game`). Built per story, 1,000 stories of one world were 1,000 equal Worlds, each with its own
rules, calendar and, through `gm.world._cache`, tool schemas and validators: about 150,000 objects in a
server under 1,000 players (bench/serve_bench.py), half the objects every full garbage collection
walked, and a world checked again for every new story. Equal definitions give equal Worlds (a World
is frozen, and built from its definitions alone), so they are shared instead.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from gm._lru import LRU
from gm.world.definition import World, world_from_data


def world_digest(world_data: dict[str, Any], dice_data: dict[str, Any] | None) -> str:
    """A digest of a world's definitions: equal for equal JSON, whatever the order of its keys."""
    canonical = json.dumps([world_data, dice_data], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


class SharedWorlds:
    """The Worlds built most recently, at most `size` of them, each found by `world_digest` (safe across threads)."""

    def __init__(self, size: int) -> None:
        self._by_digest: LRU[str, World] = LRU(size)

    def share(self, world: World) -> World:
        """The World already kept for `world`'s definitions, or `world` itself, kept from now on."""
        digest = world_digest(world.world_data, world.dice_data)
        kept = self._by_digest.get(digest)
        if kept is not None:
            return kept
        self._by_digest.put(digest, world)
        return world

    def build(self, world_data: dict[str, Any], dice_data: dict[str, Any] | None) -> World:
        """The World of these definitions: the one kept, else built (and checked) now and kept."""
        digest = world_digest(world_data, dice_data)
        kept = self._by_digest.get(digest)
        if kept is not None:
            return kept
        world = world_from_data(world_data, dice_data)
        self._by_digest.put(digest, world)
        return world
