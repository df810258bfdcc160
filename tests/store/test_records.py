"""Records built straight into their `__dict__` (gm.store.records.Built) get what pydantic would give them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlmodel import SQLModel

from gm.store.records import (
    Attempt,
    MemoryEntry,
    ModelCall,
    PausedRound,
    RevealRecord,
    RollRecord,
    RoundRecord,
    SeedRecord,
)
from gm.store.records import Story as StoryRecord

TABLES: list[type[SQLModel]] = [
    StoryRecord,
    SeedRecord,
    Attempt,
    RollRecord,
    RevealRecord,
    PausedRound,
    RoundRecord,
    MemoryEntry,
    ModelCall,
]


@pytest.mark.parametrize("table", TABLES, ids=lambda table: table.__name__)
def test_a_record_left_its_defaults_has_pydantics_defaults_and_only_its_given_fields_set(table: type[SQLModel]) -> None:
    required = {name: f"given {name}" for name, field in table.model_fields.items() if field.is_required()}
    before = datetime.now(UTC)
    first, second = table(**required), table(**required)
    assert first.model_fields_set == set(required)
    for name, field in table.model_fields.items():
        value = getattr(first, name)
        if name in required:
            assert value == required[name]
        elif field.default_factory is None:
            assert value == field.get_default(call_default_factory=True), name
        elif isinstance(value, datetime):  # a moment: now, for each record
            assert before <= value <= getattr(second, name) <= datetime.now(UTC), name
        else:  # an id drawn for each record
            assert isinstance(value, str) and value != getattr(second, name), name
    # given values come first, then the defaults, each in the fields' order (a record dumps in this order)
    given = [name for name in table.model_fields if name in required]
    assert list(first.model_dump(warnings=False))[: len(given)] == given
    assert sorted(first.model_dump(warnings=False)) == sorted(table.model_fields)


def test_a_required_field_left_out_stays_unset_and_unknown_names_are_ignored() -> None:
    call = ModelCall(purpose="judge", nonsense=1)  # type: ignore[call-arg]
    assert "prompt_tokens" not in call.__dict__ and "story_id" not in call.__dict__ and "nonsense" not in call.__dict__
    assert call.model_fields_set == {"purpose"} and call.refusals == 0 and call.finish_reason is None
