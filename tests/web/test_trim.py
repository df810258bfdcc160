"""A quiet `gm serve` gives back the memory a load left with its allocator (gm.web.process.Trimmer)."""

from __future__ import annotations

import time

import pytest

from gm.web import process


@pytest.mark.slow
def test_a_process_quiet_after_it_grew_trims_and_a_busy_one_does_not(monkeypatch: pytest.MonkeyPatch) -> None:
    resident = [100 << 20]
    monkeypatch.setattr(process, "resident_bytes", lambda: resident[0])
    trimmer = process.Trimmer(quiet_seconds=0.05, growth=16 << 20)
    trims: list[int] = []
    trimmer.trim = lambda pad: trims.append(pad) or 1
    resident[0] = 180 << 20  # a load grew it
    deadline = time.monotonic() + 0.2
    while time.monotonic() < deadline:  # busy: CPU time all the while
        trimmer.check()
    assert trims == []
    time.sleep(0.06)
    resident[0] = 120 << 20  # what the allocator still held is given back by the trim
    assert trimmer.check() is False or trims == [0]  # the window that ends now may have been busy
    time.sleep(0.06)
    trimmer.check()
    assert trims == [0]
    time.sleep(0.06)
    assert not trimmer.check()  # not grown since: no trim again
    resident[0] = 140 << 20
    time.sleep(0.06)
    assert trimmer.check() and trims == [0, 0]


def test_malloc_trim_gives_memory_back_here() -> None:
    """On glibc (this project's servers), a freed load's memory goes back to the system."""
    trim = process._malloc_trim()
    if trim is None:
        pytest.skip("no malloc_trim in this C library")
    before = process.resident_bytes()
    load = [bytearray(1000) for _ in range(100_000)]  # about 100 MiB in small blocks, through malloc
    del load[::2]  # half freed, in holes between the rest: the allocator keeps them
    grown = process.resident_bytes()
    del load
    trim(0)
    assert process.resident_bytes() < before + (grown - before) * 0.5
