"""The models' instructions: the text files of the top-level prompts/ folder, or of an edited copy.

prompts/ installs with the package as `gm.prompts` (as editor/ installs as `gm.editor`). A world
operator who wants other wording copies the folder, edits it, and points gm at the copy with
`GM_PROMPTS=DIR` or `--prompts DIR` (`gm play`, `gm serve`). Every file is read and checked when gm
starts (`use_prompts`), so a missing or empty file is one clear error then, not a failed round later.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from types import MappingProxyType

from gm.config import ENV_NAMES, Settings
from gm.errors import PromptsError

PROMPTS_ENV = ENV_NAMES["prompts"]
# Each model's instructions: the game master, the judge, and the memory keeper's two requests.
PROMPT_NAMES = ("game_master", "judge", "memory_keeper", "memory_fold")


@dataclass(frozen=True, slots=True)
class Prompts:
    """Every model's instructions, read from one folder (`where` says which, for messages)."""

    texts: Mapping[str, str]
    where: str

    def __getitem__(self, name: str) -> str:
        return self.texts[name]


def read_prompts(folder: str | Path | None = None, settings: Settings | None = None) -> Prompts:
    """The instructions in `folder`; without one, in `settings.prompts` (else the environment's `GM_PROMPTS`, read
    through gm.config) if it is set, else the installed prompts/.

    Raises `PromptsError` naming the first file that is missing, unreadable or empty (only white space).
    """
    if folder is None or str(folder) == "":
        folder = (settings or Settings.from_env()).prompts
    if folder is None:
        base = resources.files("gm.prompts")
        where = "the installed prompts"
        paths = {name: base.joinpath(f"{name}.txt") for name in PROMPT_NAMES}
    else:
        directory = Path(folder)
        where = f"the prompts folder '{directory}'"
        if not directory.is_dir():
            raise PromptsError(
                f"{where} (from --prompts or {PROMPTS_ENV}) is not a folder; copy prompts/ and point there"
            )
        paths = {name: directory / f"{name}.txt" for name in PROMPT_NAMES}
    texts: dict[str, str] = {}
    for name, path in paths.items():
        if not path.is_file():
            raise PromptsError(f"{where} has no {name}.txt; it needs {', '.join(n + '.txt' for n in PROMPT_NAMES)}")
        try:
            text = path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as error:
            raise PromptsError(f"{name}.txt in {where} cannot be read as UTF-8 text ({error})") from None
        if not text:
            raise PromptsError(f"{name}.txt in {where} is empty; the model would be told nothing")
        texts[name] = text
    return Prompts(MappingProxyType(texts), where)


_active: Prompts | None = None


def use_prompts(folder: str | Path | None = None, settings: Settings | None = None) -> Prompts:
    """Read and check the instructions (see `read_prompts`) and use them from now on in this process."""
    global _active
    _active = read_prompts(folder, settings)
    return _active


def prompts_in_use() -> Prompts:
    """The instructions in use, read (from `GM_PROMPTS`, else the installed ones) if no one chose them yet."""
    return _active if _active is not None else use_prompts()


def instructions(name: str) -> str:
    """One model's instructions, from the prompts in use."""
    return prompts_in_use()[name]
