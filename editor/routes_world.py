"""The list of worlds, creating a world, and world.json as a form."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, Response

from gm.errors import StaleFile
from gm.problems import Problem
from gm.rules.validation import validate
from gm.world.definition import DICE_FILE, WORLD_FILE, validate_world

from .checking import Findings, check_world
from .pages import STALE, Editor, editor_of, load, posted_form, save, title_of, version_of
from .saving import save_text, sweep_temporaries, world_text
from .security import valid_world_name, world_file
from .sheet_form import KIND_LABELS
from .world_form import KINDS, ROLES, WorldDraft, apply_action, draft_from_data, draft_from_form, world_data

router = APIRouter()


@dataclass(frozen=True, slots=True)
class Entry:
    """One world in the list: its folder name, title, number of checks, and what `gm check` would say."""

    name: str
    title: str
    checks: int | None
    errors: int
    warnings: int
    unreadable: str


@router.get("/", response_class=HTMLResponse)
def index(request: Request) -> HTMLResponse:
    editor = editor_of(request)
    entries, others = _entries(editor)
    return editor.page(request, "index.html", entries=entries, others=others, root_folder=str(editor.root))


def _entries(editor: Editor) -> tuple[list[Entry], list[str]]:
    """The worlds in the editor's folder, and the names of folders it cannot open (their names are not allowed)."""
    entries, others = [], []
    for folder in sorted(editor.root.iterdir()):
        if folder.name.startswith(".") or not folder.is_dir():
            continue
        if not (folder / WORLD_FILE).exists() and not (folder / DICE_FILE).exists():
            continue
        if not valid_world_name(folder.name) or folder.resolve().parent != editor.root:
            others.append(folder.name)
            continue
        entries.append(_entry(editor, folder.name))
    return entries, others


def _entry(editor: Editor, name: str) -> Entry:
    folder = editor.folder(name)
    with contextlib.suppress(OSError):
        sweep_temporaries(folder)  # what saves killed midway left behind (a save sweeps too)
    world, dice = load(folder, WORLD_FILE), load(folder, DICE_FILE)
    unreadable = next(
        (
            f"{file}: {loaded.problem.message}"
            for file, loaded in ((WORLD_FILE, world), (DICE_FILE, dice))
            if loaded.problem
        ),
        "",
    )
    checks = dice.data.get("checks") if isinstance(dice.data, dict) else None
    count = len(checks) if isinstance(checks, list) else None
    if unreadable:
        return Entry(name, title_of(world.data, name), count, 0, 0, unreadable)
    problems = validate_world(world.data, dice.data) if world.exists else validate(dice.data)
    errors = sum(problem.severity == "error" for problem in problems)
    return Entry(name, title_of(world.data, name), count, errors, len(problems) - errors, "")


@router.get("/new", response_class=HTMLResponse)
def new_world(request: Request) -> HTMLResponse:
    return _world_page(request, None, WorldDraft(), Findings())


@router.post("/new", response_model=None)
async def create_world(request: Request) -> Response:
    editor = editor_of(request)
    form = await posted_form(request)
    folder_name = form.get("folder", "").strip()
    draft = draft_from_form(form)
    action = form.get("action", "check")
    if action not in {"check", "save"}:
        apply_action(draft, action)
        return _world_page(request, None, draft, Findings(), folder_name=folder_name)
    extra: dict[str, list[Problem]] = {}
    if not valid_world_name(folder_name):
        message = "a folder name is 1 to 63 lower-case letters, digits and hyphens, starting with a letter or digit"
        extra["folder"] = [Problem("$", message)]
    elif (editor.root / folder_name).exists():
        extra["folder"] = [Problem("$", f"there is already a folder '{folder_name}'")]
    findings = check_world(draft, None, extra)
    if action == "check" or findings.errors:
        status = 422 if action == "save" else 200
        return _world_page(request, None, draft, findings, status=status, folder_name=folder_name, tried=action)
    folder = editor.folder(folder_name, must_exist=False)
    try:
        folder.mkdir()
    except FileExistsError:  # made by someone else since the check above
        findings.add("folder", Problem("$", f"there is already a folder '{folder_name}'"))
        return _world_page(request, None, draft, findings, status=409, folder_name=folder_name, tried=action)
    await run_in_threadpool(save_text, folder / WORLD_FILE, world_text(world_data(draft)[0]))
    return editor.redirect(request, f"/worlds/{folder_name}?saved=created")


@router.get("/worlds/{name}", response_class=HTMLResponse)
def world_page(request: Request, name: str, saved: str = "") -> HTMLResponse:
    folder = editor_of(request).folder(name)
    world, dice = load(folder, WORLD_FILE), load(folder, DICE_FILE)
    draft = draft_from_data(world.data) if world.exists else WorldDraft()
    findings = check_world(draft, dice.data) if world.exists and world.problem is None else Findings()
    version = version_of(folder / WORLD_FILE)  # carried by the form, so a save cannot undo a change made meanwhile
    return _world_page(
        request, name, draft, findings, saved=saved, disk=world.problem, dice_problem=dice.problem, version=version
    )


@router.post("/worlds/{name}", response_model=None)
async def edit_world(request: Request, name: str) -> Response:
    editor = editor_of(request)
    folder = editor.folder(name)
    form = await posted_form(request)
    draft = draft_from_form(form)
    action = form.get("action", "check")
    version = form.get("version")
    dice = load(folder, DICE_FILE)
    carried = version or ""
    if action not in {"check", "save"}:
        apply_action(draft, action)
        return _world_page(request, name, draft, Findings(), dice_problem=dice.problem, version=carried)
    findings = check_world(draft, dice.data)
    if action == "check" or findings.errors:
        status = 422 if action == "save" else 200
        return _world_page(
            request, name, draft, findings, status=status, dice_problem=dice.problem, tried=action, version=carried
        )
    try:
        changed = await save(world_file(folder, WORLD_FILE), world_text(world_data(draft)[0]), version)
    except StaleFile as stale:
        message = STALE.format(file=WORLD_FILE)
        return _world_page(
            request, name, draft, findings, 409, dice_problem=dice.problem, version=stale.current, stale=message
        )
    return editor.redirect(request, f"/worlds/{name}?saved={'yes' if changed else 'same'}")


def _world_page(
    request: Request,
    name: str | None,
    draft: WorldDraft,
    findings: Findings,
    status: int = 200,
    *,
    folder_name: str = "",
    saved: str = "",
    tried: str = "",
    disk: Problem | None = None,
    dice_problem: Problem | None = None,
    version: str = "",
    stale: str = "",
) -> HTMLResponse:
    editor = editor_of(request)
    return editor.page(
        request,
        "world.html",
        status,
        name=name,
        title=draft.title or name or "A new world",
        draft=draft,
        findings=findings,
        roles=ROLES,
        kinds=KINDS,
        kind_labels=KIND_LABELS,
        folder_name=folder_name,
        saved=saved,
        tried=tried,
        disk=disk,
        dice_problem=dice_problem,
        version=version,
        stale=stale,
        backup=f"{WORLD_FILE}.bak",
    )
