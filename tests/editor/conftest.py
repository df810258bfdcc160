"""The editor's fixtures: a worlds folder holding a copy of every sample world, and a client of the editor on it."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gm.editor import create_app
from tests.support.editor_forms import BASE
from tests.support.paths import SAMPLE_WORLDS


@pytest.fixture
def worlds(tmp_path: Path) -> Path:
    """A copy of worlds/ (every sample world), which the editor may change."""
    folder = tmp_path / "worlds"
    shutil.copytree(SAMPLE_WORLDS, folder)
    return folder


@pytest.fixture
def client(worlds: Path) -> Iterator[TestClient]:
    """The editor on `worlds`, from this machine (no login)."""
    with TestClient(create_app(worlds), base_url=BASE) as made:
        yield made
