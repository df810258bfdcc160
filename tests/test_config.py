"""gm's settings: every GM_*/OPENAI_* variable is read in gm.config alone, checked there, and documented from there."""

from __future__ import annotations

import ast
import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from gm.config import Settings, markdown_table
from gm.engine.prompt import VERBATIM_ROUNDS
from gm.engine.settings import RoundSettings
from gm.errors import ModelNotConfigured, OperatorError, SettingsError
from gm.store import default_database_url, make_engine
from tests.support.command_line import gm

ROOT = Path(__file__).resolve().parent.parent
VARIABLES = {field.metadata["env"]: field.name for field in dataclasses.fields(Settings)}


@pytest.fixture
def bare_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No GM_* or OPENAI_* variable set, whatever the machine has."""
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_every_setting_is_one_gm_or_openai_variable_with_a_sentence_saying_what_it_does() -> None:
    assert len(VARIABLES) == len(dataclasses.fields(Settings))  # one variable each, none shared
    assert all(name.startswith(("GM_", "OPENAI_")) for name in VARIABLES)
    for field in dataclasses.fields(Settings):
        assert field.metadata["doc"].endswith((".", ")")), field.name


def test_the_configuration_page_shows_the_settings_table_as_the_settings_object_writes_it() -> None:
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    table = page.split("<!-- settings table -->\n", 1)[1].split("<!-- end of settings table -->", 1)[0]
    assert table == markdown_table(), "docs/configuration.md is stale: paste in the output of python -m gm.config"
    for variable in VARIABLES:
        assert f"| `{variable}` |" in table


@pytest.mark.slow
def test_the_environment_is_read_in_gm_config_and_nowhere_else_in_gm_or_the_editor() -> None:
    readers = []
    for path in sorted([*(ROOT / "gm").rglob("*.py"), *(ROOT / "editor").rglob("*.py")]):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            named = (
                (isinstance(node, ast.Attribute) and node.attr in {"environ", "getenv", "environb", "putenv"})
                or (isinstance(node, ast.Name) and node.id in {"environ", "getenv"})
                or (
                    isinstance(node, ast.ImportFrom)
                    and node.module == "os"
                    and any(alias.name in {"environ", "getenv", "environb"} for alias in node.names)
                )
            )
            if named:
                readers.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert [place for place in readers if not place.startswith("gm/config.py:")] == []
    assert readers, "gm/config.py reads the environment, so the search must find it there"


def test_each_variable_is_read_into_its_field(bare_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    given = {
        "OPENAI_BASE_URL": (" http://localhost:11434/v1 ", "http://localhost:11434/v1"),
        "OPENAI_API_KEY": ("sk-env", "sk-env"),
        "OPENAI_ORG_ID": ("org-1", "org-1"),
        "OPENAI_PROJECT_ID": ("proj-1", "proj-1"),
        "GM_MODEL": ("llama3", "llama3"),
        "GM_TOOLS": (" Prompted ", "prompted"),
        "GM_JUDGE_MODEL": ("judge-m", "judge-m"),
        "GM_JUDGE_BASE_URL": ("http://judge/v1", "http://judge/v1"),
        "GM_JUDGE_API_KEY": ("sk-judge", "sk-judge"),
        "GM_PROMPTS": (str(tmp_path / "my prompts"), tmp_path / "my prompts"),
        "GM_MEMORY_BATCH": (" 2 ", 2),
        "GM_DATABASE_URL": ("sqlite:////tmp/x.db", "sqlite:////tmp/x.db"),
        "GM_HOME": (str(tmp_path), tmp_path),
        "GM_API_TOKEN": ("api-token", "api-token"),
        "GM_EDITOR_TOKEN": ("editor-token", "editor-token"),
        "GM_LEASE_SECONDS": (" 30 ", 30.0),
        "GM_HEARTBEAT_SECONDS": ("7.5", 7.5),
        "GM_SERVE_WORKER_ARGUMENTS": ('{"port": 0}', '{"port": 0}'),
        "GM_LOG_FORMAT": (" JSON ", "json"),
        "GM_DRAIN_SECONDS": ("12.5", 12.5),
        "GM_METRICS_TOKEN": ("metrics-token", "metrics-token"),
        "GM_METRICS_DIR": (str(tmp_path / "metrics"), tmp_path / "metrics"),
    }
    assert set(given) == set(VARIABLES)
    for variable, (text, _) in given.items():
        bare_env.setenv(variable, text)
    settings = Settings.from_env()
    assert {variable: getattr(settings, VARIABLES[variable]) for variable in given} == {
        variable: value for variable, (_, value) in given.items()
    }
    assert Settings.from_env(model="given").model == "given"  # a field given wins over its variable


def test_unset_and_empty_variables_leave_every_default(bare_env: pytest.MonkeyPatch) -> None:
    unset = Settings.from_env()
    for variable in VARIABLES:
        bare_env.setenv(variable, "")
    assert Settings.from_env() == unset == Settings()
    assert unset.tools == "auto" and unset.home == Path.home() / ".local" / "share" / "gm"


def test_the_defaults_are_the_librarys_own() -> None:
    rounds = RoundSettings()
    assert (Settings().lease_seconds, Settings().heartbeat_seconds) == (rounds.lease_seconds, rounds.heartbeat_seconds)
    assert Settings().memory_batch == VERBATIM_ROUNDS + 1


@pytest.mark.parametrize(
    ("variable", "text", "error", "sentence"),
    [
        ("GM_LEASE_SECONDS", "abc", SettingsError, "GM_LEASE_SECONDS must be a number of seconds, not 'abc'"),
        ("GM_HEARTBEAT_SECONDS", " 5s ", SettingsError, "GM_HEARTBEAT_SECONDS must be a number of seconds, not '5s'"),
        (
            "GM_MEMORY_BATCH",
            "9",
            SettingsError,
            "GM_MEMORY_BATCH is the number of rounds the memory keeper summarises in one call, a whole number"
            " from 1 to 8, not '9'",
        ),
        ("GM_TOOLS", "sometimes", ModelNotConfigured, "GM_TOOLS must be native, prompted or auto, not 'sometimes'."),
        ("GM_LOG_FORMAT", "yaml", SettingsError, "GM_LOG_FORMAT must be text or json, not 'yaml'"),
        ("GM_DRAIN_SECONDS", "soon", SettingsError, "GM_DRAIN_SECONDS must be a number of seconds, not 'soon'"),
    ],
)
def test_a_bad_value_is_one_gm_error_naming_its_variable(
    bare_env: pytest.MonkeyPatch, variable: str, text: str, error: type[Exception], sentence: str
) -> None:
    bare_env.setenv(variable, text)
    with pytest.raises(error) as caught:
        Settings.from_env()
    assert str(caught.value) == sentence
    assert isinstance(caught.value, SettingsError) and isinstance(caught.value, OperatorError)


def test_commands_that_use_no_setting_read_none(bare_env: pytest.MonkeyPatch) -> None:
    ran = gm("roll", "1d6", "--seed", "1", env={"GM_LEASE_SECONDS": "abc"})
    assert ran.returncode == 0 and ran.stderr == ""


def test_a_command_that_reads_the_settings_stops_at_a_bad_one_with_one_line(bare_env: pytest.MonkeyPatch) -> None:
    ran = gm("stories", env={"GM_LEASE_SECONDS": "abc"})
    assert (ran.returncode, ran.stdout, ran.stderr) == (
        2,
        "",
        "error: GM_LEASE_SECONDS must be a number of seconds, not 'abc'\n",
    )


def test_the_default_database_is_gm_db_in_gm_home(bare_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert default_database_url(Settings(home=tmp_path / "home")) == f"sqlite:///{tmp_path / 'home' / 'gm.db'}"
    assert (tmp_path / "home").is_dir()
    assert default_database_url(Settings(database_url="sqlite:///elsewhere.db")) == "sqlite:///elsewhere.db"
    bare_env.setenv("GM_HOME", str(tmp_path / "from-env"))
    assert default_database_url() == f"sqlite:///{tmp_path / 'from-env' / 'gm.db'}"


def test_postgresql_without_its_driver_is_one_sentence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as where the postgres extra is not installed
    with pytest.raises(SettingsError, match=r"PostgreSQL .* pip install 'gm\[postgres\]'$"):
        make_engine("postgresql://gm@localhost/gm")


def test_importing_gm_config_imports_no_pydantic() -> None:
    code = "import sys, gm.config; print(sorted(m for m in ('pydantic', 'pydantic_settings') if m in sys.modules))"
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "[]"
