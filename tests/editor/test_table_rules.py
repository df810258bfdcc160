"""The editor's Dice form for issue 16's table rules: edge dice, naturals and opposed checks as
fields, problems next to each, and strips with edges, naturals and opposed reads (HTTP, no browser)."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.support.editor_forms import form_of, post, problems_at, segments, submit

HEIST = "/worlds/harbour-heist/dice"


def edge_segments(html: str, check: int, edge: str) -> list[tuple[str, str]]:
    """The strip drawn for one edge of one check: each segment's label and percentage."""
    box = re.search(
        rf'<div id="strip-{check}" data-slot class="strip-box">(.*?)<p class="hint">|'
        rf'<div id="strip-{check}" data-slot class="strip-box">(.*)',
        html,
        re.S,
    )
    assert box
    body = box[1] or box[2]
    match = re.search(rf'<div class="strip-one" data-edge="{edge}">(.*?)</table>', body, re.S)
    assert match, f"no {edge} strip for check {check}"
    found = re.findall(
        r'<span class="segment-label">(.*?)</span>\s*<span class="segment-percent">(.*?)</span>', match[1], re.S
    )
    return [(unescape(label), unescape(percent)) for label, percent in found]


def test_the_form_shows_edge_dice_naturals_and_an_opposed_check(client: TestClient) -> None:
    page = client.get(HEIST).text
    assert "holds things the form cannot show" not in page  # every table rule has its field
    fields = form_of(page)
    assert (fields["checks-0-advantage"], fields["checks-0-disadvantage"]) == ("2d20kh1", "2d20kl1")
    assert [(fields[f"checks-0-naturals-{n}-face"], fields[f"checks-0-naturals-{n}-step"]) for n in (0, 1)] == [
        ("20", "1"),
        ("1", "-1"),
    ]
    assert fields["checks-3-compare"] == "opposed"
    assert (fields["checks-3-naturals-0-kind"], fields["checks-3-naturals-0-band"]) == ("band", "Outclassed them")
    assert fields["checks-3-opponent"] == "Dace"  # the first other character holding nerve


def test_each_edge_has_its_strip_and_naturals_are_counted(client: TestClient) -> None:
    page = client.get(HEIST).text
    # Odile (nerve 2) at the default target 11 reads kept - 9. Advantage: the higher of 2d20 is k at
    # most in k*k of 400. kept 1 (1/400) reads -8, Failure, stepped down; 2-8: 63/400 Failure;
    # 9-12: 80/400; 13-17: 145/400; 18-19: 72/400 and a kept 20 (39/400) are Critical success.
    assert edge_segments(page, 0, "advantage") == [
        ("Critical failure", "0.25%"),
        ("Failure", "15.75%"),
        ("Partial success", "20.00%"),
        ("Success", "36.25%"),
        ("Critical success", "27.75%"),
    ]
    assert "With disadvantage: 2d20kl1" in page
    # lockwork has no naturals and is read by value: 1d20 + 4 (hands) - 11, faces 1-6 fail
    assert segments(page, 1)[0] == ("Failure", "30.00%")


def test_an_opposed_strip_reads_against_the_opponent_picked(client: TestClient) -> None:
    page = submit(client, HEIST, "check", {"checks-3-character": "Odile", "checks-3-opponent": "Quell"}).text
    assert "1d20 for Odile against the same for Quell: the difference, -1 net" in unescape(page)
    # 1d20 - 1d20 - 1: Outmatched (difference -7 or less) in 91 of 400, as gm odds counts it.
    assert segments(page, 3)[0] == ("Outmatched", "22.75%")


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"checks-0-advantage": "2d20kq1"}, "checks-0-advantage", "error: 2d20kq1: unexpected"),
        ({"checks-0-naturals-0-step": "0"}, "checks-0-naturals-0-step", "error: step: a step of 0 moves nothing"),
        (
            {"checks-0-naturals-1-face": "21"},
            "checks-0-naturals-1-face",
            "error: face: no kept die of this check can show 21",
        ),
        (
            {"checks-3-naturals-0-band": "Triumph"},
            "checks-3-naturals-0-band",
            "warning: band: the check has no band 'Triumph'",
        ),
        ({"checks-3-reading": "successes", "checks-3-hit": "5"}, "checks-3-compare", "error: an opposed check"),
    ],
)
def test_mistakes_in_table_rules_are_shown_next_to_their_field(
    client: TestClient, changes: dict[str, str], field: str, words: str
) -> None:
    page = submit(client, HEIST, "check", changes).text
    found = problems_at(page, f"{field.rsplit('-', 1)[0]}-all" if "naturals-" in field else field)
    assert any(problem.startswith(words) for problem in found), found


def test_naturals_are_added_removed_and_saved_in_the_reference_layout(client: TestClient, worlds: Path) -> None:
    page = submit(client, "/worlds/storm-wall/dice", "add-natural:0")
    fields = form_of(page.text)
    assert (fields["checks-0-naturals-0-face"], fields["checks-0-naturals-0-step"]) == ("", "1")
    fields.update({"checks-0-naturals-0-face": "10", "checks-0-advantage": "6d10kh5"})
    saved = post(client, "/worlds/storm-wall/dice", {**fields, "action": "save"})
    assert saved.status_code == 303
    text = (worlds / "storm-wall" / "dice.json").read_text()
    assert '"advantage": "6d10kh5",' in text and '"naturals": [\n        {"face": 10, "step": 1}\n      ],' in text
    assert json.loads(text)["checks"][0]["naturals"] == [{"face": 10, "step": 1}]
    page = submit(client, "/worlds/storm-wall/dice", "remove-natural:0:0")
    assert "checks-0-naturals-0-face" not in form_of(page.text)
