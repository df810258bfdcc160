"""The Dice section: dice.json as a form with problems and chance strips, its live preview, and its raw JSON."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, Response

from gm.errors import ProblemsError, StaleFile
from gm.problems import MAX_FILE_BYTES, Problem, parse_json, read_regular
from gm.rules.validation import validate
from gm.world.definition import DICE_FILE, WORLD_FILE, validate_world
from gm.world.sheet import start_value

from .checking import Findings, check_dice
from .dice_form import (
    BAND_FIELDS,
    CHECK_FIELDS,
    COMPARES,
    READINGS,
    RESULTS,
    DiceDraft,
    apply_action,
    dice_data,
    draft_from_data,
    draft_from_form,
)
from .pages import STALE, Loaded, editor_of, load, posted_form, save, title_of, version_of
from .saving import dice_text
from .security import world_file
from .strips import Preview, preview

router = APIRouter()


@router.get("/worlds/{name}/dice", response_class=HTMLResponse)
def dice_page(request: Request, name: str, saved: str = "") -> HTMLResponse:
    folder = editor_of(request).folder(name)
    world, dice = load(folder, WORLD_FILE), load(folder, DICE_FILE)
    draft = draft_from_data(dice.data) if dice.exists else DiceDraft()
    # The form carries the file's version, so saving it cannot undo a change made on disk meanwhile.
    version = version_of(folder / DICE_FILE)
    return _dice_page(request, name, draft, world, saved=saved, disk=dice, version=version)


@router.post("/worlds/{name}/dice", response_model=None)
async def edit_dice(request: Request, name: str) -> Response:
    editor = editor_of(request)
    folder = editor.folder(name)
    form = await posted_form(request)
    draft = draft_from_form(form)
    action = form.get("action", "check")
    version = form.get("version")
    world = load(folder, WORLD_FILE)
    if action == "json":
        text = dice_text(dice_data(draft))
        return await run_in_threadpool(_raw_page, request, name, world, text, "form", version=version or "")
    if action not in {"check", "save"}:
        apply_action(draft, action)
        return await run_in_threadpool(_dice_page, request, name, draft, world, problems=False, version=version or "")
    findings = await run_in_threadpool(check_dice, draft, _usable(world))
    if action == "check" or findings.errors:
        status = 422 if action == "save" else 200
        return await run_in_threadpool(
            _dice_page, request, name, draft, world, findings, status, tried=action, version=version or ""
        )
    try:
        changed = await save(world_file(folder, DICE_FILE), dice_text(dice_data(draft)), version)
    except StaleFile as stale:
        return await run_in_threadpool(
            _dice_page,
            request,
            name,
            draft,
            world,
            findings,
            409,
            version=stale.current,
            stale=STALE.format(file=DICE_FILE),
        )
    return editor.redirect(request, f"/worlds/{name}/dice?saved={'yes' if changed else 'same'}")


@router.post("/worlds/{name}/dice/preview", response_class=HTMLResponse)
async def preview_dice(request: Request, name: str) -> HTMLResponse:
    """The problems and strips of a form as it stands, as slots the page's script swaps in; nothing is saved."""
    editor = editor_of(request)
    folder = editor.folder(name)
    draft = draft_from_form(await posted_form(request))
    world = load(folder, WORLD_FILE)

    def render() -> HTMLResponse:
        findings = check_dice(draft, _usable(world))
        return editor.page(request, "preview.html", **_context(name, draft, world, findings))

    return await run_in_threadpool(render)


@router.get("/worlds/{name}/dice/raw", response_class=HTMLResponse)
def raw_page(request: Request, name: str) -> HTMLResponse:
    folder = editor_of(request).folder(name)
    return _raw_page(request, name, load(folder, WORLD_FILE), "", "", version=version_of(folder / DICE_FILE))


@router.post("/worlds/{name}/dice/raw", response_model=None)
async def paste_dice(request: Request, name: str) -> Response:
    """Pasted dice.json: checked the same way as the form, opened in the form, or saved when it has no errors."""
    editor = editor_of(request)
    folder = editor.folder(name)
    form = await posted_form(request)
    text, action, version = form.get("text", ""), form.get("action", "check"), form.get("version")
    world = load(folder, WORLD_FILE)
    carried = version or ""
    try:
        data = parse_json(text, "pasted dice.json")
    except ProblemsError as error:
        return _raw_page(request, name, world, text, "pasted", error.problems, status=422, version=carried)
    if action == "open":
        draft = draft_from_data(data)
        findings = await run_in_threadpool(check_dice, draft, _usable(world))
        return await run_in_threadpool(
            _dice_page, request, name, draft, world, findings, opened=not _holds(data), version=carried
        )
    problems, blocking = _paste_problems(data, _usable(world))
    if action != "save" or blocking:
        status = 422 if action == "save" else 200
        return _raw_page(request, name, world, text, "pasted", problems, status=status, tried=action, version=carried)
    try:
        changed = await save(world_file(folder, DICE_FILE), dice_text(dice_data(draft_from_data(data))), version)
    except StaleFile as stale:
        message = STALE.format(file=DICE_FILE)
        return _raw_page(request, name, world, text, "pasted", problems, 409, action, stale.current, message)
    return editor.redirect(request, f"/worlds/{name}/dice?saved={'yes' if changed else 'same'}")


def _paste_problems(data: Any, world: Any) -> tuple[list[Problem], int]:
    """Every problem of pasted data, as `gm check` finds them, and how many are errors it causes.

    The pasted data itself is checked, not the form it would become, so fields the form cannot hold are
    refused too. world.json's own errors are listed but do not stop the paste, as in the form.
    """
    if world is None:
        problems = [replace(problem, file=DICE_FILE) for problem in validate(data)]
        return problems, sum(problem.severity == "error" for problem in problems)
    own = set(validate_world(world, None))
    problems = validate_world(world, data)
    return problems, sum(problem.severity == "error" and problem not in own for problem in problems)


def _usable(world: Loaded) -> Any:
    """world.json's data to check the dice with, or None when there is none (or it cannot be read)."""
    return world.data if world.problem is None else None


def _dice_page(
    request: Request,
    name: str,
    draft: DiceDraft,
    world: Loaded,
    findings: Findings | None = None,
    status: int = 200,
    *,
    problems: bool = True,
    saved: str = "",
    tried: str = "",
    disk: Loaded | None = None,
    opened: bool = False,
    version: str = "",
    stale: str = "",
) -> HTMLResponse:
    if findings is None:
        findings = check_dice(draft, _usable(world)) if problems else Findings()
    lossy = disk is not None and disk.exists and disk.problem is None and not _holds(disk.data)
    return editor_of(request).page(
        request,
        "dice.html",
        status,
        **_context(name, draft, world, findings),
        saved=saved,
        tried=tried,
        disk=disk.problem if disk else None,
        missing=disk is not None and not disk.exists,
        lossy=lossy or opened,
        results=RESULTS,
        readings=READINGS,
        compares=COMPARES,
        backup=f"{DICE_FILE}.bak",
        version=version,
        stale=stale,
    )


def _context(name: str, draft: DiceDraft, world: Loaded, findings: Findings) -> dict[str, Any]:
    """What the page and its preview slots share: the draft, its problems, a strip per check, the pickers."""
    previews: list[Preview] = []
    for check in draft.checks:
        shown = preview(check, _usable(world))
        check.target, check.character = shown.target, shown.character
        previews.append(shown)
    return {
        "name": name,
        "title": title_of(world.data, name),
        "draft": draft,
        "findings": findings,
        "previews": previews,
        "modifiers": _modifier_names(world.data, draft),
        "world_problem": world.problem,
        "no_world": not world.exists,
    }


def _modifier_names(world: Any, draft: DiceDraft) -> list[str]:
    """The modifier picker's choices: every variable some character holds as a whole number (or a bounded one), and
    any in use."""
    names: set[str] = set()
    characters = world.get("characters") if isinstance(world, dict) else None
    for raw in characters if isinstance(characters, list) else []:
        variables = raw.get("variables") if isinstance(raw, dict) else None
        for variable, raw_value in variables.items() if isinstance(variables, dict) else ():
            value = start_value(raw_value)  # a bounded number adds the value it holds at the roll
            if isinstance(value, int | float) and not isinstance(value, bool) and float(value).is_integer():
                names.add(variable)
    names.update(check.modifier for check in draft.checks if check.modifier)
    return sorted(names, key=str.casefold)


def _holds(data: Any) -> bool:
    """Whether the form can show all of parsed dice.json `data` (no unknown fields or odd shapes to lose)."""
    if not isinstance(data, dict) or set(data) - {"$schema", "checks"} or not isinstance(data.get("checks"), list):
        return False
    for check in data["checks"]:
        if not isinstance(check, dict) or set(check) - {*CHECK_FIELDS, "bands", "naturals"}:
            return False
        bands = check.get("bands")
        if not isinstance(bands, list):
            return False
        if any(not isinstance(band, dict) or set(band) - {*BAND_FIELDS, "critical", "effects"} for band in bands):
            return False
        if any(not _effects_shown(band.get("effects", [])) for band in bands):
            return False
        naturals = check.get("naturals", [])
        if not isinstance(naturals, list) or any(not _natural_shown(natural) for natural in naturals):
            return False
    return True


def _effects_shown(effects: Any) -> bool:
    """Whether a band's effects line holds all of `effects`: objects of text with no other fields."""
    return isinstance(effects, list) and all(
        isinstance(effect, dict)
        and not set(effect) - {"variable", "of", "by"}
        and all(isinstance(value, str) for value in effect.values())
        for effect in effects
    )


def _natural_shown(natural: Any) -> bool:
    """Whether the form's natural row holds all of `natural`: a step or a band, not both."""
    if not isinstance(natural, dict) or set(natural) - {"face", "sides", "step", "band"}:
        return False
    return not ("step" in natural and "band" in natural)


def _raw_page(
    request: Request,
    name: str,
    world: Loaded,
    text: str,
    source: str,
    problems: list[Problem] | None = None,
    status: int = 200,
    tried: str = "",
    version: str = "",
    stale: str = "",
) -> HTMLResponse:
    """The raw view: dice.json as it is on disk, and a box for pasted (or the form's) JSON with its problems."""
    editor = editor_of(request)
    path = world_file(editor.folder(name), DICE_FILE)
    on_disk, unreadable = None, ""
    if path.exists():
        try:
            on_disk = read_regular(path, MAX_FILE_BYTES).decode("utf-8", errors="replace")
        except OSError as error:  # a FIFO or a device is refused, never waited on
            unreadable = error.strerror or str(error)
    return editor.page(
        request,
        "raw.html",
        status,
        name=name,
        title=title_of(world.data, name),
        on_disk=on_disk,
        unreadable=unreadable,
        text=text,
        source=source,
        problems=problems,
        tried=tried,
        version=version,
        stale=stale,
    )
