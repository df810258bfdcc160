"""gm behind real chat front ends: Open WebUI and SillyTavern played through their own pages in Chromium.

    python bench/front_ends.py --work ~/.cache/gm-front-ends --sillytavern-repo https://github.com/SillyTavern/SillyTavern

Not part of the test suite (both front ends are large: Open WebUI's venv is about 7 GB). It:

1. installs Open WebUI from PyPI into its own venv (`--open-webui-version`, default 0.12.4) and SillyTavern
   from its repository (`--sillytavern-ref`, default the 1.12.6 tag; `npm ci`), both under `--work`,
   unless they are there already;
2. starts `gm serve --model rehearsal --rehearsal-delay 2` on a fresh SQLite database, the logging proxy
   `bench/request_log.py` in front of it, Open WebUI (offline: no model downloads, no update check, no
   Ollama, no login, `ENABLE_FORWARD_USER_INFO_HEADERS=true`) and SillyTavern (no autorun, no auto
   updates, no downloadable tokenizers), all on 127.0.0.1;
3. plays chats through each front end's pages with Playwright driving Debian's Chromium: rounds, swipes
   and "Try Again" (first answers too), "Add Details", an edited message, a marker cut out in the edit
   box, stops (in a first round and a later one), a forked chat, "Continue", and SillyTavern's
   "Test Message";
4. checks the rendered page after each answer (cards closed, opening to the dice line; no marker text,
   no token), counts stories against chats (a fork counts as a chat) and runs `gm audit` on every story.

It prints the table of actions (action, request seen, what gm did) and the counts, writes them to
`--report` (Markdown), saves screenshots to `--screenshots`, and the requests each front end sent, with
gm's answers, to `--fixtures` (`tests/fixtures/front_ends/` holds a run's, for the default suite).
Exit status 1 if any check failed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
GM_PORT, PROXY_PORT, OPEN_WEBUI_PORT, SILLYTAVERN_PORT = 8790, 8791, 8793, 8792
CHROMIUM = "/usr/bin/chromium"
MARKER_TEXT = re.compile(r"gm-story|gm-opening|<!--")
FIRST, SECOND, THIRD = "I pick the lock of the harbour office.", "I slip past the night watchman.", "I search the desk."


@dataclass
class Row:
    front_end: str
    chat: str
    action: str
    seen: str = ""
    did: str = ""
    ok: bool = True


@dataclass
class Run:
    """What a run saw: the table's rows, the failed checks, and the chats each front end made."""

    work: Path
    shots: Path
    rows: list[Row] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    chats: dict[str, int] = field(default_factory=dict)
    log_at: int = 0

    @property
    def log(self) -> Path:
        return self.work / "requests.jsonl"

    def check(self, ok: bool, what: str) -> bool:
        if not ok:
            self.failures.append(what)
            print(f"  FAILED: {what}", flush=True)
        return ok


# Installing and starting


def run_command(command: list[str], **options: Any) -> None:
    print("$", " ".join(command), flush=True)
    subprocess.run(command, check=True, **options)


def install(arguments: argparse.Namespace) -> tuple[Path, Path]:
    """Open WebUI's venv and SillyTavern's folder under --work, installed if missing."""
    work: Path = arguments.work
    venv = work / "openwebui"
    if not (venv / "bin" / "open-webui").exists():
        run_command([sys.executable, "-m", "venv", str(venv)])
        run_command([str(venv / "bin" / "pip"), "install", "-q", f"open-webui=={arguments.open_webui_version}"])
    tavern = work / "sillytavern"
    if not (tavern / "node_modules").is_dir():
        if not tavern.is_dir():
            source = arguments.sillytavern_repo
            run_command(["git", "clone", "-q", "--branch", arguments.sillytavern_ref, source, str(tavern)])
        run_command(["npm", "ci", "--no-audit", "--no-fund"], cwd=tavern)
    config = (tavern / "default" / "config.yaml").read_text()
    for old, new in {
        "port: 8000": f"port: {SILLYTAVERN_PORT}",
        "autorun: true": "autorun: false",
        "enableExtensionsAutoUpdate: true": "enableExtensionsAutoUpdate: false",
        "enableDownloadableTokenizers: true": "enableDownloadableTokenizers: false",
        "disableAutoDownload: false": "disableAutoDownload: true",
        "dataRoot: ./data": f"dataRoot: {work / 'st-data'}",
    }.items():
        config = config.replace(old, new)
    (tavern / "config.yaml").write_text(config)
    return venv, tavern


def wait_for(url: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except Exception:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{url} did not answer within {seconds:g} s") from None
            time.sleep(1)


@contextmanager
def services(arguments: argparse.Namespace, venv: Path, tavern: Path) -> Iterator[dict[str, str]]:
    """gm serve, the logging proxy, Open WebUI and SillyTavern, started fresh and stopped at the end."""
    work: Path = arguments.work
    for old in ("gm.sqlite", "requests.jsonl", "owui-data", "st-data"):
        path = work / old
        shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)
    database = f"sqlite:///{work / 'gm.sqlite'}"
    environment = {**os.environ, "GM_DATABASE_URL": database}
    started: list[subprocess.Popen[bytes]] = []

    def start(name: str, command: list[str], **options: Any) -> None:
        log = (work / f"{name}.log").open("wb")
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, **options)
        started.append(process)

    gm = [sys.executable, "-m", "gm.cli", "serve", "--model", "rehearsal", "--rehearsal-delay", "2"]
    start("gm", [*gm, "--port", str(GM_PORT), "--worlds", str(ROOT / "worlds")], env=environment, cwd=ROOT)
    proxy = [sys.executable, str(ROOT / "bench" / "request_log.py"), "--log", str(work / "requests.jsonl")]
    start("proxy", [*proxy, "--listen", f"127.0.0.1:{PROXY_PORT}", "--to", f"http://127.0.0.1:{GM_PORT}"])
    base = f"http://127.0.0.1:{PROXY_PORT}/v1"
    owui = {
        **os.environ,
        "DATA_DIR": str(work / "owui-data"),
        "OFFLINE_MODE": "true",
        "HF_HUB_OFFLINE": "1",
        "ENABLE_VERSION_UPDATE_CHECK": "false",
        "RAG_EMBEDDING_ENGINE": "openai",  # no local embedding model is loaded at start
        "BYPASS_EMBEDDING_AND_RETRIEVAL": "true",
        "ENABLE_OLLAMA_API": "false",
        "WEBUI_AUTH": "False",
        "WEBUI_SECRET_KEY": "gm-front-ends-bench",
        "OPENAI_API_BASE_URL": base,
        "OPENAI_API_KEY": "gm-local",
        "ENABLE_FORWARD_USER_INFO_HEADERS": "true",
        "ANONYMIZED_TELEMETRY": "false",
        "DO_NOT_TRACK": "true",
        "SCARF_NO_ANALYTICS": "true",
    }
    (work / "owui-data").mkdir(parents=True)
    owui_command = [str(venv / "bin" / "open-webui"), "serve", "--host", "127.0.0.1", "--port", str(OPEN_WEBUI_PORT)]
    start("openwebui", owui_command, env=owui, cwd=work)
    start("sillytavern", ["node", "server.js", "--port", str(SILLYTAVERN_PORT), "--listen", "false"], cwd=tavern)
    try:
        wait_for(f"http://127.0.0.1:{GM_PORT}/v1/models", 60)
        wait_for(f"http://127.0.0.1:{PROXY_PORT}/v1/models", 30)
        wait_for(f"http://127.0.0.1:{SILLYTAVERN_PORT}/", 180)
        wait_for(f"http://127.0.0.1:{OPEN_WEBUI_PORT}/health", 300)
        yield {"database": database, "base": base}
    finally:
        for process in reversed(started):
            with _quiet():
                os.killpg(process.pid, signal.SIGTERM)
        for process in started:
            with _quiet():
                process.wait(timeout=20)


def _quiet() -> contextlib.suppress:
    return contextlib.suppress(ProcessLookupError, subprocess.TimeoutExpired)


# What gm did: the stories before and after an action


def story_state(database: str) -> dict[str, tuple[int, tuple[int, ...], str]]:
    """Each story's round count, its newest round's roll ids and the start of that round's narration."""
    from gm.store import Store

    store = Store(database)
    state = {}
    for story in store.stories():
        last = store.round(story.id, story.rounds) if story.rounds else None
        rolls = tuple(sorted(roll.id or 0 for roll in store.rolls_of_round(story.id, story.rounds))) if last else ()
        state[story.id] = (story.rounds, rolls, (last.narration[:60] if last else ""))
    store.engine.dispose()
    return state


def what_changed(before: dict[str, Any], after: dict[str, Any]) -> str:
    said = []
    for story_id, (rounds, rolls, narration) in after.items():
        short = story_id[:6]
        if story_id not in before:
            said.append(f"new story {short} ({rounds} round{'s' if rounds != 1 else ''})")
            continue
        old_rounds, old_rolls, old_narration = before[story_id]
        if rounds > old_rounds:
            said.append(f"story {short}: round {rounds} played")
        elif narration != old_narration:
            kept = "same dice" if rolls == old_rolls else "NEW DICE"
            said.append(f"story {short}: round {rounds} told again ({kept})")
    for story_id in before.keys() - after.keys():
        said.append(f"story {story_id[:6]} removed")
    return "; ".join(said) or "no story started or played"


def requests_seen(run: Run) -> tuple[str, list[dict[str, Any]]]:
    """The chat requests logged since the last call, summed up in a few words."""
    lines = run.log.read_text().splitlines() if run.log.exists() else []
    new = [json.loads(line) for line in lines[run.log_at :]]
    run.log_at = len(lines)
    said = []
    for entry in new:
        body = entry.get("body") or {}
        if entry["path"] != "/v1/chat/completions" or not isinstance(body, dict):
            continue
        messages = body.get("messages") or []
        last = next((m for m in reversed(messages) if m.get("role") == "user"), {})
        text = str(last.get("content") or "")
        if text.startswith("### Task:"):
            said.append("task: " + text.splitlines()[1][:40])
            continue
        roles = "".join({"system": "s", "user": "u", "assistant": "a"}.get(m.get("role"), "?") for m in messages)
        hint = " +chat-id" if "x-openwebui-chat-id" in entry.get("headers", {}) else ""
        stream = "stream" if body.get("stream") else "plain"
        status = entry.get("status", "cut off" if entry.get("cancelled") else "?")
        if entry.get("cancelled"):
            status = "client closed"
        said.append(f"{roles} '{text[:28]}' {stream}{hint} -> {status}")
    return "; ".join(said) or "no chat request", new


def act(run: Run, database: str, front_end: str, chat: str, action: str, work: Callable[[], str | None]) -> Row:
    """Do one action through a front end's page, and note what it sent and what gm did."""
    print(f"[{front_end} / {chat}] {action}", flush=True)
    before = story_state(database)
    note = work() or ""
    time.sleep(1.0)  # the front end's background tasks, if any
    seen, _ = requests_seen(run)
    did = what_changed(before, story_state(database)) + (f"; {note}" if note else "")
    row = Row(front_end, chat, action, seen, did)
    run.rows.append(row)
    print(f"    sent: {row.seen}\n    gm:   {row.did}", flush=True)
    return row


# Open WebUI's pages


class OpenWebUI:
    url = f"http://127.0.0.1:{OPEN_WEBUI_PORT}/"

    def __init__(self, page: Any, run: Run) -> None:
        self.page, self.run = page, run

    def new_chat(self) -> None:
        page = self.page
        page.goto(self.url)
        page.locator("#chat-input").wait_for()
        deadline = time.monotonic() + 8  # the release notes' dialog comes a moment after the page, the first time
        while time.monotonic() < deadline:
            lets_go = page.get_by_text("Okay, Let's Go!")
            if lets_go.count() and lets_go.first.is_visible():
                lets_go.first.click()
                page.wait_for_timeout(500)
                break
            page.wait_for_timeout(250)

    def answers(self) -> Any:
        return self.page.locator("#messages-container .chat-assistant")

    def idle(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        self.page.wait_for_timeout(800)
        while self.page.locator("button[aria-label='Stop']").count():
            if time.monotonic() > deadline:
                raise TimeoutError("Open WebUI still answering")
            self.page.wait_for_timeout(300)
        self.page.wait_for_timeout(800)

    def send(self, text: str, *, stop_after: float | None = None) -> None:
        box = self.page.locator("#chat-input")
        box.click()
        box.fill(text)
        self.page.keyboard.press("Enter")
        if stop_after is not None:
            self.page.wait_for_timeout(int(stop_after * 1000))
            self.page.locator("button[aria-label='Stop']").click()
        self.idle()

    def regenerate(self, choice: str) -> None:
        self.answers().last.hover()
        self.page.locator("button[aria-label='Regenerate']").last.click()
        self.page.wait_for_timeout(500)
        self.page.get_by_role("menuitem", name=choice).or_(self.page.get_by_text(choice, exact=True)).last.click()
        self.idle()

    def edit_first(self, text: str) -> None:
        """Edit the first player message Open WebUI shows (of the branch on screen) and send it."""
        user = self.page.locator(".chat-user").first
        user.hover()
        user.locator("button[aria-label='Edit']").click()
        self.page.locator("textarea[id^='message-edit-']").fill(text)
        self.page.locator("#confirm-edit-message-button").click()
        self.idle()

    def fork(self) -> None:
        self.answers().last.hover()
        self.page.locator("button[aria-label='Fork chat']").last.click()
        self.page.wait_for_timeout(2500)

    def continue_answer(self) -> str:
        self.answers().last.hover()
        self.page.locator("#continue-response-button").last.click()
        self.idle()
        return "shown: " + self.answers().last.inner_text()[-90:].replace("\n", " ")

    def check_page(self, label: str) -> None:
        """Cards render closed and open to the dice line; no marker or token text anywhere in the chat."""
        run, page = self.run, self.page
        shown = page.locator("#messages-container").inner_text()
        run.check(not MARKER_TEXT.search(shown), f"Open WebUI {label}: marker text on screen")
        cards = page.locator("#messages-container .chat-assistant button[aria-expanded]")
        if cards.count():
            card = cards.last
            run.check(card.get_attribute("aria-expanded") == "false", f"Open WebUI {label}: a card renders open")
            closed = page.locator("#messages-container").inner_text()
            card.click()
            page.wait_for_timeout(400)
            opened = page.locator("#messages-container").inner_text()
            lines = len(re.findall(r"\dd\d+ \(", opened)) - len(re.findall(r"\dd\d+ \(", closed))
            run.check(lines == 1, f"Open WebUI {label}: an opened card shows no dice line")
            card.click()


# SillyTavern's pages


class SillyTavern:
    url = f"http://127.0.0.1:{SILLYTAVERN_PORT}/"

    def __init__(self, page: Any, run: Run) -> None:
        self.page, self.run = page, run

    def connect(self, base: str, model: str, *, test: bool) -> str:
        page = self.page
        page.goto(self.url)
        page.wait_for_timeout(3000)
        self._confirm()
        page.locator("#sys-settings-button .drawer-toggle").click()
        page.wait_for_timeout(600)
        page.select_option("#main_api", "openai")
        page.select_option("#chat_completion_source", "custom")
        page.fill("#custom_api_url_text", base)
        page.locator("#custom_api_url_text").dispatch_event("input")
        page.click("#api_button_openai")
        page.wait_for_timeout(2500)
        page.select_option("#model_custom_select", model)
        page.wait_for_timeout(800)
        toast = ""
        if test:
            page.click("#test_api_button")
            page.wait_for_timeout(3000)
            toast = self.toasts()
        page.locator("#sys-settings-button .drawer-toggle").click()
        page.wait_for_timeout(400)
        return toast

    def _confirm(self, seconds: float = 15) -> None:
        """Click through SillyTavern's dialogs (the welcome and persona one comes a while after the page)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            ok = self.page.locator("dialog.popup[open] .popup-button-ok:visible")
            if ok.count():
                ok.first.click()
                self.page.wait_for_timeout(800)
                return
            self.page.wait_for_timeout(300)

    def toasts(self) -> str:
        toasts = self.page.locator("#toast-container")
        return "toast: " + toasts.inner_text().replace("\n", " ")[:120] if toasts.count() else ""

    def open_character(self, name: str = "Seraphina") -> None:
        page = self.page
        page.locator("#rightNavHolder .drawer-toggle").click()
        page.wait_for_timeout(600)
        page.locator(f".character_select:has-text('{name}')").first.click()
        page.wait_for_timeout(1500)
        page.locator("#rightNavHolder .drawer-toggle").click()
        page.wait_for_timeout(400)

    def new_chat(self) -> None:
        self.page.click("#options_button")
        self.page.wait_for_timeout(300)
        self.page.click("#option_start_new_chat")
        self.page.wait_for_timeout(800)
        self._confirm(5)

    def messages(self) -> Any:
        return self.page.locator("#chat .mes")

    def idle(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        self.page.wait_for_timeout(800)
        while self.page.locator("#mes_stop").is_visible():
            if time.monotonic() > deadline:
                raise TimeoutError("SillyTavern still answering")
            self.page.wait_for_timeout(300)
        self.page.wait_for_timeout(800)

    def send(self, text: str, *, stop_after: float | None = None) -> None:
        self.page.fill("#send_textarea", text)
        self.page.click("#send_but")
        if stop_after is not None:
            self.page.wait_for_timeout(int(stop_after * 1000))
            self.page.click("#mes_stop")
        self.idle()

    def swipe(self) -> None:
        self.messages().last.hover()
        self.messages().last.locator(".swipe_right").click()
        self.idle()

    def edit_last_answer(self, change: Callable[[str], str]) -> str:
        """Edit gm's newest answer in SillyTavern's edit box; returns what the box showed."""
        last = self.messages().last
        last.hover()
        last.locator(".mes_edit").click()
        self.page.wait_for_timeout(500)
        box = last.locator("textarea.edit_textarea")
        raw = box.input_value()
        box.fill(change(raw))
        last.locator(".mes_edit_done").click()
        self.page.wait_for_timeout(500)
        return raw

    def branch(self) -> None:
        last = self.messages().last
        last.hover()
        last.locator(".extraMesButtonsHint").click()
        self.page.wait_for_timeout(300)
        last.locator(".mes_create_branch").click()
        self.page.wait_for_timeout(2000)

    def continue_answer(self) -> str:
        self.page.click("#options_button")
        self.page.wait_for_timeout(300)
        self.page.click("#option_continue")
        self.idle()
        return self.toasts()

    def check_page(self, label: str) -> None:
        run, page = self.run, self.page
        shown = page.locator("#chat").inner_text()
        run.check(not MARKER_TEXT.search(shown), f"SillyTavern {label}: marker text on screen")
        cards = page.locator("#chat .mes_text details")
        if cards.count():
            card = cards.last
            run.check(card.get_attribute("open") is None, f"SillyTavern {label}: a card renders open")
            card.locator("summary").click()
            page.wait_for_timeout(300)
            run.check(bool(re.search(r"\dd\d+ \(", card.inner_text())), f"SillyTavern {label}: no dice line in a card")
            card.locator("summary").click()


# The scenarios


def play_open_webui(run: Run, page: Any, database: str) -> None:
    ui = OpenWebUI(page, run)
    name = "Open WebUI"
    step = functools_partial(act, run, database, name)
    ui.new_chat()
    step("A", "first message", lambda: ui.send(FIRST))
    ui.check_page("first answer")
    step("A", "Try Again on the first answer", lambda: ui.regenerate("Try Again"))
    step("A", "second message", lambda: ui.send(SECOND))
    step("A", "Add Details", lambda: ui.regenerate("Add Details"))
    step("A", "More Concise", lambda: ui.regenerate("More Concise"))
    ui.check_page("after rewrites")
    step("A", "stop during round 3", lambda: ui.send(THIRD, stop_after=1.0))
    started = time.monotonic()
    step("A", "send again at once", lambda: ui.send(THIRD))
    step("A", "Continue", ui.continue_answer)
    ui.check_page("story")
    page.wait_for_timeout(1000)  # the card the check opened and closed again settles
    page.screenshot(path=str(run.shots / "open-webui-story.png"), full_page=True)
    chat_a = page.url
    step("A", "fork the chat", ui.fork)
    step("A-fork", "message in the fork", lambda: ui.send("I climb onto the roof."))
    ui.check_page("fork")
    step("A-fork", "second message in the fork", lambda: ui.send("I look down into the yard."))
    page.goto(chat_a)
    page.locator("#chat-input").wait_for()
    step("A", "message in the chat it was forked from", lambda: ui.send("I slip out by the back door."))
    step("A", "edit an earlier message and send", lambda: ui.edit_first("I pick the lock of the side door."))
    run.chats["Open WebUI"] = 2
    ui.new_chat()
    step("B", "stop during the first round", lambda: ui.send(FIRST, stop_after=1.0))
    step("B", "send again", lambda: ui.send(SECOND))
    run.chats["Open WebUI"] += 1
    ui.new_chat()
    step("C", "/start", lambda: ui.send("/start"))
    step("C", "Try Again on /start", lambda: ui.regenerate("Try Again"))
    step("C", "first move", lambda: ui.send(FIRST))
    ui.check_page("after /start")
    run.chats["Open WebUI"] += 1
    del started


def play_sillytavern(run: Run, page: Any, database: str, base: str) -> None:
    ui = SillyTavern(page, run)
    name = "SillyTavern"
    step = functools_partial(act, run, database, name)
    step("-", "connect and Test Message", lambda: ui.connect(base, "gm/harbour-heist", test=True))
    ui.open_character()
    ui.new_chat()
    step("A", "first message (Seraphina's card)", lambda: ui.send(FIRST))
    ui.check_page("first answer")
    step("A", "swipe the first answer", ui.swipe)
    step("A", "second message", lambda: ui.send(SECOND))
    step("A", "swipe the second answer", ui.swipe)
    shown: dict[str, str] = {}

    def cut_marker() -> str:
        shown["raw"] = ui.edit_last_answer(lambda raw: re.sub(r"\n*\[gm-story\]:.*$", "", raw, flags=re.M))
        return "edit box showed: " + shown["raw"].strip().splitlines()[-1][:70]

    step("A", "edit box: cut the marker out", cut_marker)
    run.check("token" not in shown["raw"].lower() and "<!--" not in shown["raw"], "SillyTavern: edit box shows a token")
    step("A", "third message", lambda: ui.send(THIRD))
    step("A", "stop during round 4", lambda: ui.send("I open the strongbox.", stop_after=1.0))
    step("A", "send again at once", lambda: ui.send("I open the strongbox."))
    step("A", "Continue", ui.continue_answer)
    ui.check_page("story")
    page.wait_for_timeout(6000)  # the Continue toast fades
    page.screenshot(path=str(run.shots / "sillytavern-story.png"), full_page=True)
    step("A", "branch at the last answer", ui.branch)
    step("A-branch", "message in the branch", lambda: ui.send("I climb onto the roof."))
    run.chats["SillyTavern"] = 2
    ui.new_chat()
    step("B", "first message", lambda: ui.send("I listen at the harbourmaster's door."))
    step("B", "edit box: cut the only marker out", cut_marker)
    step("B", "second message", lambda: ui.send(SECOND))
    run.chats["SillyTavern"] += 1


def functools_partial(function: Callable[..., Row], *bound: Any) -> Callable[..., Row]:
    def call(*more: Any) -> Row:
        return function(*bound, *more)

    return call


def audit_all(run: Run, database: str) -> dict[str, int]:
    from gm.store import Store

    store = Store(database)
    stories = store.stories()
    store.engine.dispose()
    passed = 0
    for story in stories:
        command = [sys.executable, "-m", "gm.cli", "audit", story.id]
        done = subprocess.run(command, env={**os.environ, "GM_DATABASE_URL": database}, capture_output=True, text=True)
        if run.check(done.returncode == 0, f"gm audit {story.id[:6]}: {done.stdout.strip()[-200:]}"):
            passed += 1
    empty = sum(1 for story in stories if story.rounds == 0)
    run.check(empty == 0, f"{empty} stories with no round")
    return {"stories": len(stories), "audits passed": passed, "stories with no round": empty}


def report(run: Run, counts: dict[str, int], versions: dict[str, str]) -> str:
    lines = ["| front end | chat | action | request seen | what gm did |", "| --- | --- | --- | --- | --- |"]
    for row in run.rows:
        cells = [row.front_end, row.chat, row.action, row.seen, row.did]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    chats = sum(run.chats.values())
    lines += [
        "",
        f"Front ends: {', '.join(f'{name} {version}' for name, version in versions.items())}.",
        f"Chats: {chats} ({', '.join(f'{name} {count}' for name, count in run.chats.items())}); "
        f"stories: {counts['stories']}; `gm audit` passed on {counts['audits passed']}; "
        f"stories with no round: {counts['stories with no round']}.",
    ]
    if run.failures:
        lines += ["", "Failed checks:", *[f"- {failure}" for failure in run.failures]]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path.home() / ".cache" / "gm-front-ends")
    parser.add_argument("--open-webui-version", default="0.12.4")
    parser.add_argument("--sillytavern-repo", default="https://github.com/SillyTavern/SillyTavern")
    parser.add_argument("--sillytavern-ref", default="1.12.6")
    parser.add_argument("--screenshots", type=Path, default=ROOT / "tests" / "artifacts")
    parser.add_argument("--fixtures", type=Path, help="write the requests each front end sent here, as JSON")
    parser.add_argument("--report", type=Path, help="write the table and counts here (Markdown)")
    parser.add_argument("--only", choices=("open-webui", "sillytavern"))
    arguments = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # stopped: the services it started are stopped too
    for port in (GM_PORT, PROXY_PORT, OPEN_WEBUI_PORT, SILLYTAVERN_PORT):
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                parser.error(f"port {port} is in use on 127.0.0.1; stop what listens there first")
    arguments.work.mkdir(parents=True, exist_ok=True)
    arguments.screenshots.mkdir(parents=True, exist_ok=True)
    venv, tavern = install(arguments)
    from playwright.sync_api import sync_playwright

    run = Run(arguments.work, arguments.screenshots)
    versions = {
        "Open WebUI": arguments.open_webui_version,
        "SillyTavern": json.loads((tavern / "package.json").read_text())["version"],
    }
    with services(arguments, venv, tavern) as served, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            if arguments.only != "sillytavern":
                play_open_webui(run, browser.new_page(viewport={"width": 1280, "height": 900}), served["database"])
            if arguments.only != "open-webui":
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                play_sillytavern(run, page, served["database"], served["base"])
        finally:
            browser.close()
        counts = audit_all(run, served["database"])
        chats = sum(run.chats.values())
        run.check(counts["stories"] == chats, f"{counts['stories']} stories for {chats} chats")
        if arguments.fixtures is not None:
            save_fixtures(run, arguments.fixtures)
    text = report(run, counts, versions)
    print(text)
    if arguments.report is not None:
        arguments.report.write_text(text)
    return 1 if run.failures else 0


def save_fixtures(run: Run, folder: Path) -> None:
    """Each front end's chat requests (and gm's answers), in order, one file per front end."""
    folder.mkdir(parents=True, exist_ok=True)
    entries = [json.loads(line) for line in run.log.read_text().splitlines()]
    by_front_end: dict[str, list[dict[str, Any]]] = {"open-webui": [], "sillytavern": []}
    for entry in entries:
        if entry["path"] != "/v1/chat/completions":
            continue
        agent = entry["headers"].get("user-agent", "")
        by_front_end["sillytavern" if "node-fetch" in agent else "open-webui"].append(entry)
    for name, found in by_front_end.items():
        # Open WebUI sends the same list of its built-in tools with every chat request (about 30 KB): kept once.
        tools = next((entry["body"]["tools"] for entry in found if "tools" in (entry.get("body") or {})), None)
        for entry in found:
            if tools is not None and (entry.get("body") or {}).get("tools") == tools:
                entry["body"]["tools"] = "$tools"
        kept = {"front_end": name, "tools": tools, "requests": found}
        (folder / f"{name}.json").write_text(json.dumps(kept, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    sys.exit(main())
