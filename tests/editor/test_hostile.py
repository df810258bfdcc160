"""The editor's file safety (issue 10, defects 6 and 7): symbolic links, stale forms, a killed save, FIFOs.

- world.json linked to a file outside the worlds folder is refused on save (403), as dice.json is;
- a form opened before the file changed on disk is not saved over that change: the save is refused
  with a message and the form is kept (each form carries the version of the file it was opened from);
- a save killed with SIGKILL leaves a temporary file, which the next save in that folder removes;
- anything named world.json or dice.json that is not a regular file is refused, never waited on.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gm.editor.saving import save_text
from tests.support.editor_forms import form_of, post, submit


def test_the_world_form_does_not_save_through_a_symbolic_link(client: TestClient, worlds: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.json"
    secret = '{"title": "A file outside the worlds folder"}\n'
    outside.write_text(secret)
    linked = worlds / "tea-house" / "world.json"
    linked.unlink()
    linked.symlink_to(outside)
    fields = {"csrf": client.app.state.editor.csrf.token, "action": "save"}  # type: ignore[attr-defined]
    fields.update(form_of(client.get("/worlds/harbour-heist").text))  # a whole, valid form
    fields.pop("version", None)
    answer = post(client, "/worlds/tea-house", {**fields, "action": "save"})
    assert answer.status_code == 403, answer.text[:500]
    assert "symbolic link" in answer.text
    assert outside.read_text() == secret and linked.is_symlink()
    assert not (worlds / "tea-house" / "world.json.bak").exists()  # no copy of the outside file either


@pytest.mark.parametrize(
    ("page", "file", "change"),
    [
        ("/worlds/harbour-heist", "world.json", {"title": "From the form"}),
        ("/worlds/harbour-heist/dice", "dice.json", {"checks-0-name": "From the form"}),
    ],
)
def test_a_stale_form_is_not_saved_over_a_change_on_disk(
    client: TestClient, worlds: Path, page: str, file: str, change: dict[str, str]
) -> None:
    path = worlds / "harbour-heist" / file
    opened = form_of(client.get(page).text)
    assert opened.get("version"), "the form carries the version of the file it was opened from"
    meanwhile = path.read_text() + "\n"  # any change at all counts
    path.write_text(meanwhile)  # another editor, or a text editor, saved meanwhile

    answer = post(client, page, {**opened, **change, "action": "save"})
    assert answer.status_code == 409, answer.text[:500]
    assert "changed on disk" in answer.text
    assert "From the form" in answer.text  # the form is kept, with the author's change
    assert path.read_text() == meanwhile  # the change on disk is not lost
    again = form_of(answer.text)
    assert again["version"] != opened["version"]  # saving again, knowingly, replaces it
    saved = post(client, page, {**again, "action": "save"})
    assert saved.status_code == 303, saved.text[:500]
    assert "From the form" in path.read_text()


def test_a_fresh_form_saves(client: TestClient, worlds: Path) -> None:
    answer = submit(client, "/worlds/harbour-heist", "save", {"title": "A fresh title"})
    assert answer.status_code == 303
    assert json.loads((worlds / "harbour-heist" / "world.json").read_text())["title"] == "A fresh title"


def test_a_stale_paste_is_not_saved_over_a_change_on_disk(client: TestClient, worlds: Path) -> None:
    path = worlds / "harbour-heist" / "dice.json"
    opened = form_of(client.get("/worlds/harbour-heist/dice/raw").text)
    assert opened.get("version")
    pasted = path.read_text().replace("Risky attempt", "Pasted attempt")
    meanwhile = path.read_text() + "\n"
    path.write_text(meanwhile)
    answer = post(client, "/worlds/harbour-heist/dice/raw", {**opened, "text": pasted, "action": "save"})
    assert answer.status_code == 409 and "changed on disk" in answer.text
    assert path.read_text() == meanwhile


KILLED_SAVE = """
import os, sys, time
from pathlib import Path
from gm.editor import saving
def hang(descriptor):
    print("writing", flush=True)
    time.sleep(600)  # killed here: the temporary file is written, not yet renamed into place
saving.os.fsync = hang
saving.save_text(Path(sys.argv[1]), "{}\\n")
"""


@pytest.mark.subprocess
def test_a_save_killed_midway_leaves_no_temporary_file_for_good(worlds: Path) -> None:
    path = worlds / "tea-house" / "world.json"
    before = path.read_text()
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(KILLED_SAVE), str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "writing"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
    leftovers = [entry.name for entry in path.parent.iterdir() if entry.name.endswith(".tmp")]
    assert leftovers, "the killed save left its temporary file (so this test sees the sweep)"
    assert path.read_text() == before  # the file itself was never half-written

    save_text(path, before.replace("Second Pot", "Third Pot"))
    assert [entry.name for entry in path.parent.iterdir() if entry.name.endswith(".tmp")] == []


def test_a_temporary_file_of_a_live_save_is_left_alone(worlds: Path) -> None:
    folder = worlds / "tea-house"
    live = folder / f".world.json.{os.getpid()}.inflight.tmp"  # another thread of this process, mid-save
    live.write_text("{}")
    old = folder / ".world.json.abcd1234.tmp"  # the naming of earlier versions: swept once an hour old
    old.write_text("{}")
    hour_ago = time.time() - 3700
    os.utime(old, (hour_ago, hour_ago))
    save_text(folder / "world.json", (folder / "world.json").read_text().replace("Second Pot", "Fourth Pot"))
    assert live.exists() and not old.exists()


def test_a_fifo_is_never_saved_to(worlds: Path, client: TestClient) -> None:
    path = worlds / "tea-house" / "world.json"
    fields = form_of(client.get("/worlds/tea-house").text)
    path.unlink()
    os.mkfifo(path)
    answer = post(client, "/worlds/tea-house", {**fields, "action": "save"})
    assert answer.status_code == 403 and "not a regular file" in answer.text
    assert path.is_fifo()
