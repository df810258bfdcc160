"""The front door: `from gm import ...` names everything a library user needs, and `import gm` stays cheap."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import gm


@pytest.mark.parametrize("name", sorted(set(gm.__all__) - {"__version__"}))
def test_every_name_of_the_front_door_is_there(name: str) -> None:
    value = getattr(gm, name)
    home = importlib.import_module(gm._EXPORTS[name])
    assert value is (home if name == "dice" else getattr(home, name))  # the very object its own module defines


def test_all_names_exactly_the_front_door() -> None:
    assert sorted(gm.__all__) == sorted(["__version__", *gm._EXPORTS])


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Gaem'"):
        gm.Gaem  # noqa: B018


HEAVY = ("openai", "sqlalchemy", "sqlmodel", "fastapi", "pydantic", "aiohttp", "jsonschema")


@pytest.mark.parametrize("code", ["import gm", "from gm import dice; dice.roll('2d6')"])
def test_importing_gm_or_its_dice_loads_no_heavy_library(code: str) -> None:
    """A program that only rolls dice never loads the model client, the database or the web server."""
    probe = f"import sys; {code}; print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"
