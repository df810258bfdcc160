"""What is derived from a World alone is built once per World object, kept within a bound, and never shared wrongly."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from gm.engine.prompt import describe_world
from gm.engine.tools.offered import tool_schemas
from gm.world._cache import PerWorld
from gm.world.loading import load_world
from tests.support.paths import SAMPLE_WORLDS


def test_a_value_is_built_once_per_world_object_and_the_oldest_goes_past_the_bound() -> None:
    built: list[str] = []
    titles = PerWorld(lambda world: built.append(world.title) or world.title.upper(), size=2)
    first, second, third = (SimpleNamespace(title=name) for name in ("a", "b", "c"))
    assert [titles(first), titles(first), titles(second)] == ["A", "A", "B"]
    assert built == ["a", "b"]
    titles(third)  # the first is now the least recently used, and goes
    assert titles(first) == "A"
    assert built == ["a", "b", "c", "a"]


def test_an_equal_world_that_is_another_object_gets_its_own_entry() -> None:
    built: list[object] = []
    cache = PerWorld(lambda world: built.append(world) or len(built))
    one, other = SimpleNamespace(title="x"), SimpleNamespace(title="x")
    assert (cache(one), cache(other), cache(one)) == (1, 2, 1)


def test_tool_schemas_are_shared_by_a_worlds_rounds_but_the_list_is_the_callers(harbor: Path) -> None:
    world = load_world(harbor)
    offered = tool_schemas(world)
    offered.clear()  # a caller may do as it likes with its list
    again = tool_schemas(world)
    assert [tool["function"]["name"] for tool in again] == ["roll_check", "roll_dice", "narrate"]
    assert all(a is b for a, b in zip(again, tool_schemas(world)))  # the schemas themselves are built once


def test_each_world_gets_its_own_tools_and_description() -> None:
    worlds = SAMPLE_WORLDS
    heist, tea = load_world(worlds / "harbour-heist"), load_world(worlds / "tea-house")
    assert "advance_time" in [tool["function"]["name"] for tool in tool_schemas(heist)]
    assert [tool["function"]["name"] for tool in tool_schemas(tea)] == ["roll_dice", "narrate"]
    assert heist.title in describe_world(heist) and tea.title in describe_world(tea)
    assert describe_world(heist) is describe_world(heist)
