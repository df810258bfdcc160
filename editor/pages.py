"""What every route shares: the editor's state (its folder, token, templates), rendering, reading forms and files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, RedirectResponse
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from starlette.exceptions import HTTPException

from gm.errors import ProblemsError, UnsafeTarget
from gm.problems import Problem, read_json

from .saving import file_version, save_text
from .security import CSRF_FIELD, CsrfGuard, world_folder

TEMPLATES = Path(__file__).with_name("templates")
LOGGED_IN = "gm.editor.logged_in"  # the scope's mark, set by the login middleware on a valid session
MAX_FORM_FIELDS = 20_000  # 40 checks of 20 bands is about 4,500 fields; a world's form far fewer

# One environment for every editor in the process: the templates are the package's own files, and compiling
# one (the Dice page's most of all) costs tens of milliseconds that a second editor (a test's, a second app in
# one process) would otherwise pay again. Rendering from one environment in several threads is safe.
_TEMPLATES = Environment(
    loader=FileSystemLoader(TEMPLATES),
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


class Editor:
    """One editor over one folder of worlds: its token for forms and its templates (which escape everything)."""

    def __init__(self, root: Path, *, needs_login: bool = False) -> None:
        self.root = root.resolve()
        self.csrf = CsrfGuard()
        self.needs_login = needs_login
        self.templates = _TEMPLATES

    def folder(self, name: str, must_exist: bool = True) -> Path:
        """The folder of world `name`; a 404 when the name is not allowed or (with `must_exist`) there is none."""
        folder = world_folder(self.root, name)
        if must_exist and not folder.is_dir():
            raise HTTPException(404, f"There is no world called {name!r} here.")
        return folder

    def logged_in(self, request: Request) -> bool:
        """Whether `request` may see the forms' token: it came with a valid session, or the editor has no login."""
        return not self.needs_login or request.scope.get(LOGGED_IN, False) is True

    def page(self, request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
        """A rendered page with the path the editor is mounted at, and the forms' token for a logged-in client only.

        A page answered without a login (the login page, an error under /static or /login) carries no token
        and no "Log out" button: a page from another site that fetched it must not learn the token.
        """
        logged_in = self.logged_in(request)
        html = self.templates.get_template(template).render(
            root=request.scope.get("root_path", ""),
            csrf=self.csrf.token if logged_in else "",
            csrf_field=CSRF_FIELD,
            logged_in=logged_in,
            login_required=self.needs_login,
            **context,
        )
        return HTMLResponse(html, status_code=status)

    def redirect(self, request: Request, path: str) -> RedirectResponse:
        """A 303 to `path` under the editor (after a save: reloading the page then does not post again)."""
        return RedirectResponse(request.scope.get("root_path", "") + path, status_code=303)


def editor_of(request: Request) -> Editor:
    editor: Editor = request.app.state.editor
    return editor


async def posted_form(request: Request) -> dict[str, str]:
    """The posted form's fields (the last of a repeated name), once its token is checked."""
    form = await request.form(max_files=0, max_fields=MAX_FORM_FIELDS)
    fields = {name: value for name, value in form.multi_items() if isinstance(value, str)}
    editor_of(request).csrf.check_token(fields.get(CSRF_FIELD))
    return fields


@dataclass(frozen=True, slots=True)
class Loaded:
    """A world file as read: its parsed data (None when missing or unreadable) and, if unreadable, why."""

    data: Any
    exists: bool
    problem: Problem | None = None


def load(folder: Path, filename: str) -> Loaded:
    """Read and parse `filename` in a world folder; a file that cannot be used is reported, not raised."""
    path = folder / filename
    if path.is_symlink():
        return Loaded(None, True, Problem("$", "it is a symbolic link, which the editor does not follow"))
    if not path.exists():
        return Loaded(None, False)
    try:
        return Loaded(read_json(path), True)
    except ProblemsError as error:
        return Loaded(None, True, error.problems[0])


def version_of(path: Path) -> str:
    """The version of a world file for its form to carry ("" when there is none, or it cannot be used)."""
    try:
        return file_version(path)
    except (UnsafeTarget, OSError):
        return ""


async def save(path: Path, text: str, version: str | None) -> bool:
    """Save a world file in a worker thread (see `save_text`); a link or a FIFO is a 403, `StaleFile` is raised."""
    try:
        return await run_in_threadpool(save_text, path, text, version)
    except UnsafeTarget as error:
        raise HTTPException(403, str(error)) from None


STALE = (
    "{file} was changed on disk after this form was opened, so it was not saved; your form is kept below."
    " Reload the page to see the file as it is now, or save again to replace it with this form."
)


def title_of(world: Any, name: str) -> str:
    """A world's title for headings, or its folder name when world.json has none."""
    title = world.get("title") if isinstance(world, dict) else None
    return title if isinstance(title, str) and title.strip() else name
