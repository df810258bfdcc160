"""Every setting gm reads from the environment (`GM_*`, `OPENAI_*`), read here and nowhere else.

`Settings.from_env()` reads them all at once, through pydantic-settings, and checks each value: a
bad one is a `SettingsError` (or, for `GM_TOOLS`, the `ModelNotConfigured` it is) whose sentence
names the variable and says what it must be. Everything else in gm takes settings as arguments: the
command line and `gm serve` build one `Settings` as a command starts and pass its values down; a
library user builds one (`Settings.from_env()`, or `Settings(model=...)` with no environment at all)
or passes values directly. Where a library entry point is given nothing (`Store()`, `Game(...)`
without `memory_batch`, the prompts before `use_prompts`), it reads `Settings.from_env()` itself, so a
program that sets `GM_DATABASE_URL` finds its stories as `gm` does.

Reading the environment checks every variable, not just the ones the caller uses: a wrong value is
wrong wherever it is read. The commands that use no setting (`gm roll`, `gm odds`, `gm check`) read none.

Importing this module is cheap (the command line imports it for every command): pydantic-settings is
imported by `Settings.from_env()`, the first time it runs. The table in docs/configuration.md is
`markdown_table()`'s output (`python -m gm.config` prints it; a test keeps them equal).
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args, get_type_hints

from gm.errors import ModelNotConfigured, SettingsError

if TYPE_CHECKING:
    from pydantic_settings import BaseSettings

ToolsMode = Literal["native", "prompted", "auto"]
LogFormat = Literal["text", "json"]
TOOLS_MODES: tuple[ToolsMode, ...] = get_args(ToolsMode)
MEMORY_BATCH_MAX = 8  # rounds in one memory call at most (each round's text is up to 6,000 characters)
MEMORY_BATCH_DEFAULT = 4  # one more than the rounds the prompt shows verbatim (gm.engine.memory says why)
DEFAULT_HOME = "~/.local/share/gm"


# How each variable's text becomes its value. Each is the rule gm applied before there was one place for them.


def _stripped(text: str) -> str | None:
    """Surrounding spaces dropped; nothing left means unset."""
    return text.strip() or None


def _as_given(text: str) -> str | None:
    """The text as it is (a path or a URL may hold spaces); empty means unset."""
    return text or None


def _path(text: str) -> Path | None:
    return Path(text) if text else None


def _tools(text: str) -> ToolsMode:
    mode = text.strip().lower() or "auto"
    for known in TOOLS_MODES:
        if mode == known:
            return known
    raise ModelNotConfigured(f"GM_TOOLS must be native, prompted or auto, not {mode!r}.")


def _log_format(text: str) -> LogFormat | None:
    chosen = text.strip().lower()
    if chosen in ("text", "json"):
        return "text" if chosen == "text" else "json"
    if not chosen:
        return None
    raise SettingsError(f"GM_LOG_FORMAT must be text or json, not {text[:40]!r}")


def _memory_batch(text: str) -> int | None:
    text = text.strip()
    if not text:
        return None
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= MEMORY_BATCH_MAX:
        raise SettingsError(
            "GM_MEMORY_BATCH is the number of rounds the memory keeper summarises in one call,"
            f" a whole number from 1 to {MEMORY_BATCH_MAX}, not {text[:40]!r}"
        )
    return int(text)


def _seconds(name: str) -> Callable[[str], float | None]:
    def read(text: str) -> float | None:
        text = text.strip()
        if not text:
            return None
        try:
            return float(text)
        except ValueError:
            raise SettingsError(f"{name} must be a number of seconds, not {text!r}") from None

    return read


def _setting(
    env: str, default: Any, doc: str, read: Callable[[str], Any], shown: str | None = None, *, secret: bool = False
) -> Any:
    """A field of `Settings`: read from `env` by `read` (None from `read`: the default), documented by `doc`
    (`shown` is its default in words, where the value itself says too little); a secret is left out of repr."""
    metadata = {"env": env, "doc": doc, "read": read, "shown": shown}
    if callable(default):
        return field(default_factory=default, metadata=metadata, repr=not secret)
    return field(default=default, metadata=metadata, repr=not secret)


def _home() -> Path:
    return Path(DEFAULT_HOME).expanduser()


@dataclass(frozen=True, kw_only=True)
class Settings:
    """gm's settings, each from one environment variable; a field not set there has its default.

    Build one with `Settings.from_env()`, or directly (`Settings(model="llama3.1")`) to use no environment.
    """

    # The model
    base_url: str | None = _setting(
        "OPENAI_BASE_URL",
        None,
        "The OpenAI-compatible endpoint the game master's model is at (Ollama, vLLM, llama.cpp, LM Studio...);"
        " unset, OpenAI's own (`https://api.openai.com/v1`). `--base-url` overrides it.",
        _stripped,
    )
    api_key: str | None = _setting(
        "OPENAI_API_KEY",
        None,
        "The endpoint's key. A local server needs none (gm then sends a placeholder); OpenAI needs one."
        " `--api-key` overrides it.",
        _stripped,
        secret=True,
    )
    organization: str | None = _setting(
        "OPENAI_ORG_ID",
        None,
        "The OpenAI organization requests are made for (sent as `OpenAI-Organization`); unset, none is sent.",
        _stripped,
    )
    project: str | None = _setting(
        "OPENAI_PROJECT_ID",
        None,
        "The OpenAI project requests are made for (sent as `OpenAI-Project`); unset, none is sent.",
        _stripped,
    )
    model: str | None = _setting(
        "GM_MODEL",
        None,
        "The game master's model, as the endpoint names it (`llama3.1`, `gpt-4o-mini`). Needed to play unless"
        " `--model` names one (or `--model rehearsal`, the offline stand-in).",
        _stripped,
    )
    tools: ToolsMode = _setting(
        "GM_TOOLS",
        "auto",
        "How tools are offered to the model: `native` (the request's `tools`), `prompted` (described in the"
        " prompt, calls read from the text) or `auto` (native until the server refuses tools, then prompted)."
        " `--tools` overrides it.",
        _tools,
    )
    judge_model: str | None = _setting(
        "GM_JUDGE_MODEL",
        None,
        "The model that judges each narration against the dice; unset, the game master's. `--judge` overrides it.",
        _stripped,
    )
    judge_base_url: str | None = _setting(
        "GM_JUDGE_BASE_URL",
        None,
        "Another endpoint for the judge (such as a small fast model's server); unset, the game master's.",
        _stripped,
    )
    judge_api_key: str | None = _setting(
        "GM_JUDGE_API_KEY",
        None,
        "The judge's endpoint key; unset, the game master's key (or a placeholder on another endpoint).",
        _stripped,
        secret=True,
    )
    prompts: Path | None = _setting(
        "GM_PROMPTS",
        None,
        "A folder with the models' instructions, an edited copy of `prompts/`; unset, the installed ones."
        " `--prompts` overrides it.",
        _path,
    )
    memory_batch: int = _setting(
        "GM_MEMORY_BATCH",
        MEMORY_BATCH_DEFAULT,
        f"How many rounds the memory keeper summarises in one model call, 1 to {MEMORY_BATCH_MAX}: it waits"
        " until that many are unremembered, then asks for all of them at once.",
        _memory_batch,
    )
    # The database
    database_url: str | None = _setting(
        "GM_DATABASE_URL",
        None,
        "Where stories are kept: any SQLAlchemy URL; `postgresql://...` uses psycopg (install `gm[postgres]`).",
        _as_given,
        shown="a SQLite file, `gm.db` in `GM_HOME`",
    )
    home: Path = _setting(
        "GM_HOME",
        _home,
        "The folder of the default SQLite database.",
        _path,
        shown=f"`{DEFAULT_HOME}`",
    )
    # gm serve and gm edit
    api_token: str | None = _setting(
        "GM_API_TOKEN",
        None,
        "`gm serve`: when set, starting a story (and the `/v1` endpoint) needs"
        " `Authorization: Bearer <GM_API_TOKEN>`; unset, anyone who reaches the server may start one.",
        _as_given,
        secret=True,
    )
    editor_token: str | None = _setting(
        "GM_EDITOR_TOKEN",
        None,
        "The world editor's login token (at least 8 characters; never printed). Unset, the editor needs no"
        " login on this machine, and prints a fresh token when it serves other machines.",
        _as_given,
        secret=True,
    )
    lease_seconds: float = _setting(
        "GM_LEASE_SECONDS",
        20.0,
        "`gm serve`: how long a round's hold on its story lasts without renewal, so a process that died"
        " mid-round holds its story at most this long.",
        _seconds("GM_LEASE_SECONDS"),
    )
    heartbeat_seconds: float = _setting(
        "GM_HEARTBEAT_SECONDS",
        5.0,
        "`gm serve`: how often a process renews the leases of the rounds it runs (one statement for all of them);"
        " at least twice per lease.",
        _seconds("GM_HEARTBEAT_SECONDS"),
    )
    log_format: LogFormat = _setting(
        "GM_LOG_FORMAT",
        "text",
        "`gm serve`: `text` (lines for people) or `json` (one object per line, with the story and round where"
        " known; docs/operations.md). `--log-format` overrides it.",
        _log_format,
    )
    drain_seconds: float = _setting(
        "GM_DRAIN_SECONDS",
        30.0,
        "`gm serve`: after SIGTERM, how long rounds in flight may take to finish before they are stopped (and"
        " failed cleanly); no new round starts meanwhile.",
        _seconds("GM_DRAIN_SECONDS"),
    )
    metrics_token: str | None = _setting(
        "GM_METRICS_TOKEN",
        None,
        "`gm serve`: when set, `/metrics` (Prometheus) answers to `Authorization: Bearer <GM_METRICS_TOKEN>`;"
        " unset, `/metrics` is off (404).",
        _as_given,
        secret=True,
    )
    metrics_dir: Path | None = _setting(
        "GM_METRICS_DIR",
        None,
        "`gm serve`: a folder where the processes count their metrics (prometheus-client's multiprocess mode);"
        " unset, `--workers N` makes one for its workers and removes it as it stops.",
        _path,
    )
    serve_worker_arguments: str | None = _setting(
        "GM_SERVE_WORKER_ARGUMENTS",
        None,
        "Set by `gm serve --workers N` for its worker processes (the options it checked, as JSON); not for people.",
        _as_given,
    )

    @classmethod
    def from_env(cls, **given: Any) -> Settings:
        """The settings in the environment, read and checked now; `given` fields win over it.

        A bad value is one `SettingsError` naming its variable (`GM_TOOLS`: `ModelNotConfigured`, also one).
        """
        read = _environment_reader()
        try:
            found = read()
        except Exception as error:  # pydantic's ValidationError: the gm error a reader raised is inside it
            raise _gm_error_in(error) from None
        values = {name: value for name, value in found.model_dump().items() if value is not None}
        return cls(**{**values, **given})

    def export(self, *names: str) -> None:
        """Put these fields' values into this process's environment, for the processes it starts (`gm serve
        --workers N` hands its options to its workers so)."""
        for name in names:
            value = getattr(self, name)
            if value is not None:
                os.environ[_FIELDS[name].metadata["env"]] = str(value)


_FIELDS = {setting.name: setting for setting in dataclasses.fields(Settings)}
ENV_NAMES: Mapping[str, str] = {name: setting.metadata["env"] for name, setting in _FIELDS.items()}


@functools.cache
def _environment_reader() -> type[BaseSettings]:
    """A pydantic-settings class with one field per setting, each read as text from its variable by its reader.

    Built from `Settings` the first time the environment is read, so that importing this module imports no
    pydantic. Only the variables named here are read (case-sensitive, as the operating system has them);
    no `.env` file, no secrets folder.
    """
    from pydantic import BeforeValidator, Field, create_model
    from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

    class _Environment(BaseSettings):
        model_config = SettingsConfigDict(case_sensitive=True, extra="ignore")

        @classmethod
        def settings_customise_sources(
            cls,
            settings_cls: type[BaseSettings],
            init_settings: PydanticBaseSettingsSource,
            env_settings: PydanticBaseSettingsSource,
            dotenv_settings: PydanticBaseSettingsSource,
            file_secret_settings: PydanticBaseSettingsSource,
        ) -> tuple[PydanticBaseSettingsSource, ...]:
            return (env_settings,)

    hints = get_type_hints(Settings)
    fields: dict[str, Any] = {}
    for name, setting in _FIELDS.items():
        reader = setting.metadata["read"]
        kind = hints[name] | None
        fields[name] = (
            Annotated[kind, BeforeValidator(functools.partial(_read_text, reader))],
            Field(default=None, validation_alias=setting.metadata["env"]),
        )
    model: type[BaseSettings] = create_model("_Environment", __base__=_Environment, **fields)
    return model


def _read_text(reader: Callable[[str], Any], value: Any) -> Any:
    return reader(value) if isinstance(value, str) else value


def _gm_error_in(error: Exception) -> Exception:
    """The gm error one of the readers raised, from pydantic's ValidationError around it (else the error)."""
    for detail in getattr(error, "errors", list)():
        cause = (detail.get("ctx") or {}).get("error")
        if isinstance(cause, SettingsError):
            return cause
    return error


def count_metrics_in(folder: Path) -> None:
    """Have prometheus-client count in files in `folder` (its multiprocess mode), in this process and those it
    starts: it reads `PROMETHEUS_MULTIPROC_DIR` as it is first imported. Not a gm setting but prometheus-client's
    own variable, written here as every variable gm touches is."""
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(folder)


def proxy_for(url: str) -> str | None:
    """The proxy the environment names for requests to `url`, as HTTP clients read it: `HTTPS_PROXY` or `HTTP_PROXY`
    by the URL's scheme (else `ALL_PROXY`, any case), none where `NO_PROXY` covers its host. Not a gm setting but
    the operating system's convention; read here, as every variable gm reads is."""
    import urllib.parse
    import urllib.request

    parts = urllib.parse.urlsplit(url)
    proxies = urllib.request.getproxies()
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    if not proxy or (parts.hostname and urllib.request.proxy_bypass(parts.hostname)):
        return None
    return proxy


def markdown_table() -> str:
    """The settings as docs/configuration.md lists them: variable, default, what it does."""
    rows = ["| Variable | Default | What it does |", "|---|---|---|"]
    for setting in _FIELDS.values():
        shown = setting.metadata["shown"]
        if shown is None:
            default = setting.default
            shown = "unset" if default is None else f"`{default:g}`" if isinstance(default, float) else f"`{default}`"
        rows.append(f"| `{setting.metadata['env']}` | {shown} | {setting.metadata['doc']} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(markdown_table(), end="")
