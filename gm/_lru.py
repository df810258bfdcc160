"""A cache that keeps only its most recently used entries, so a long-running server's memory stays bounded.

>>> cache: LRU[str, int] = LRU(2)
>>> cache.put("a", 1); cache.put("b", 2); cache.get("a")
1
>>> cache.put("c", 3)  # "b" is now the least recently used, and goes
>>> cache.get("b"), cache.get("a"), cache.get("c"), len(cache)
(None, 1, 3, 2)
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class LRU(Generic[K, V]):
    """At most `size` entries; putting one more in evicts the one used least recently (safe across threads)."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"an LRU cache holds at least 1 entry, not {size}")
        self.size = size
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        """The entry for `key` (now the most recently used), or None."""
        with self._lock:
            value = self._entries.get(key)
            if value is not None:
                self._entries.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> None:
        """Keep `value` for `key` as the most recently used entry, evicting the least recently used beyond `size`."""
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def pop(self, key: K) -> V | None:
        """Remove the entry for `key`, returning it (None if there was none)."""
        with self._lock:
            return self._entries.pop(key, None)

    def snapshot(self) -> list[K]:
        """The keys held now, least recently used first (a copy, so the cache may change meanwhile)."""
        with self._lock:
            return list(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries
