"""Values that are a pure function of a World, built once per World object and kept, a bounded number of them.

A story's World is built once and kept by `gm.engine.game.Game` (for the stories played most recently), so
what the round derives from it alone (the tool schemas and their validators, the world's part of the
game master's prompt) need not be derived again every model call. Worlds hold dicts, so they cannot
be hashed: entries are found by the World object's identity, and each entry keeps its World, so
that identity cannot pass to another object while the entry lives.

>>> calls = []
>>> lengths = PerWorld(lambda world: calls.append(world) or len(world.title), size=2)
>>> from types import SimpleNamespace
>>> world = SimpleNamespace(title="Harbour")
>>> lengths(world), lengths(world), len(calls)
(7, 7, 1)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from gm._lru import LRU

V = TypeVar("V")
CACHED = 1024  # as many as gm.engine.game keeps built Worlds: one per story played recently


class PerWorld(Generic[V]):
    """`build(world)`, kept for the `size` World objects used most recently (see the module docstring)."""

    def __init__(self, build: Callable[[Any], V], size: int = CACHED) -> None:
        self._build = build
        self._kept: LRU[int, tuple[Any, V]] = LRU(size)

    def __call__(self, world: Any) -> V:
        found = self._kept.get(id(world))
        if found is not None and found[0] is world:
            return found[1]
        value = self._build(world)
        self._kept.put(id(world), (world, value))
        return value
