"""Helpers for the editor's route tests: reading a page's form as a browser would, and posting it back."""

from __future__ import annotations

import re
from html import unescape
from html.parser import HTMLParser
from pathlib import Path

from fastapi.testclient import TestClient
from httpx2 import Response

from gm.editor.saving import dice_text
from tests.support.paths import SAMPLE_WORLDS

SAMPLES = SAMPLE_WORLDS
BASE = "http://127.0.0.1"


class FormReader(HTMLParser):
    """The fields of the first form with a method of post, as a browser would send them (no buttons)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.fields: dict[str, str] = {}
        self.in_form = False
        self.select: str | None = None
        self.first_option: str | None = None
        self.textarea: str | None = None
        self.done = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {name: value or "" for name, value in attrs}
        if tag == "form" and not self.done:
            self.in_form = found.get("method") == "post"
        if not self.in_form:
            return
        name = found.get("name")
        if tag == "input" and name:
            kind = found.get("type", "text")
            if kind == "checkbox":
                if "checked" in found:
                    self.fields[name] = found.get("value", "on")
            else:
                self.fields[name] = found.get("value", "")
        elif tag == "select" and name:
            self.select, self.first_option = name, None
        elif tag == "option" and self.select:
            if self.first_option is None:
                self.first_option = found.get("value", "")
                self.fields.setdefault(self.select, self.first_option)
            if "selected" in found:
                self.fields[self.select] = found.get("value", "")
        elif tag == "textarea" and name:
            self.textarea = name
            self.fields[name] = ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "form" and self.in_form:
            self.in_form, self.done = False, True
        elif tag == "select":
            self.select = None
        elif tag == "textarea":
            self.textarea = None

    def handle_data(self, data: str) -> None:
        if self.textarea:
            # A browser drops one line break right after <textarea>; the templates put none there.
            self.fields[self.textarea] += data


def form_of(html: str) -> dict[str, str]:
    reader = FormReader()
    reader.feed(html)
    return reader.fields


def submit(
    client: TestClient, path: str, action: str, changes: dict[str, str] | None = None, **kwargs: str
) -> Response:
    """Load the form at `path`, change some fields (None removes one), and press the button `action`."""
    fields = form_of(client.get(path).text)
    fields.update(changes or {})
    return post(client, path, {**fields, "action": action}, **kwargs)


def post(client: TestClient, path: str, fields: dict[str, str], **kwargs: str) -> Response:
    return client.post(path, data=fields, follow_redirects=False, **kwargs)


def problems_at(html: str, field_id: str) -> list[str]:
    """The problems the page shows at one field, as (severity, text) joined: 'error: ...'."""
    match = re.search(rf'<ul class="problems" id="p-{re.escape(field_id)}" data-slot>(.*?)</ul>', html, re.S)
    assert match, f"no problem list for {field_id}"
    items = re.findall(r'<li class="(error|warning)"[^>]*>(.*?)</li>', match[1], re.S)
    return [f"{severity}: {unescape(re.sub(r'<[^>]+>', '', text))}" for severity, text in items]


def segments(html: str, check: int) -> list[tuple[str, str]]:
    """The strip of one check: each segment's label and percentage, left to right."""
    match = re.search(rf'<div id="strip-{check}" data-slot class="strip-box">(.*?)</table>', html, re.S)
    assert match, f"no strip for check {check}"
    found = re.findall(
        r'<span class="segment-label">(.*?)</span>\s*<span class="segment-percent">(.*?)</span>', match[1], re.S
    )
    return [(unescape(label), unescape(percent)) for label, percent in found]


NOTICE = {
    "key": "notice",
    "name": "Notice",
    "use": "Spotting what is hidden.",
    "dice": "2d6",
    "bands": [
        {"label": "Miss it", "max": 6, "result": "failed"},
        {"label": "Glimpse", "min": 7, "max": 9, "result": "partial"},
        {"label": "See it", "min": 10, "result": "succeeded"},
    ],
}


def with_dice(worlds: Path, name: str, checks: list[dict[str, object]]) -> Path:
    path = worlds / name / "dice.json"
    path.write_text(dice_text({"checks": checks}))
    return path
