"""What the Dice page costs for checks of big dice (issue 40, hole 11): 40 checks of 100d1000kh50 cost 24 s of CPU
a GET, value by value over each check's 49,951 values. Strips are now worked out run by run of band (their cost is
in bands, not values), and a notation's exact odds once per process, so such a page costs about what a page of
1d20 checks costs."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gm.editor import create_app
from tests.support.worlds import HARBOR_WORLD, write_world

CHECKS = 8


def world(folder: Path, notation: str, low: int, high: int) -> None:
    bands = [
        {"label": "Low", "max": low, "result": "failed"},
        {"label": "Mid", "min": low + 1, "max": high, "result": "partial"},
        {"label": "High", "min": high + 1, "result": "succeeded"},
    ]
    checks = [
        {"key": f"c{at}", "name": f"Check {at}", "dice": notation, "compare": "absolute", "bands": bands}
        for at in range(CHECKS)
    ]
    write_world(folder, HARBOR_WORLD, {"checks": checks})


def fastest_get(client: TestClient, path: str) -> float:
    times = []
    for _ in range(3):
        began = time.perf_counter()
        assert client.get(path).status_code == 200
        times.append(time.perf_counter() - began)
    return min(times)


@pytest.mark.slow
def test_a_dice_page_of_big_dice_costs_about_what_one_of_small_dice_costs(tmp_path: Path) -> None:
    world(tmp_path / "big", "100d1000kh50", 20_000, 35_000)
    world(tmp_path / "small", "1d20", 7, 14)
    with TestClient(create_app(tmp_path), base_url="http://127.0.0.1") as client:
        assert "Low" in client.get("/worlds/big/dice").text  # the exact odds of 100d1000kh50, once per process
        big, small = fastest_get(client, "/worlds/big/dice"), fastest_get(client, "/worlds/small/dice")
    # Before: about 4 s a check here (28 s for this page, 400 times the small page); after, 1 to 4 times it.
    assert big < 10 * small, (big, small)
