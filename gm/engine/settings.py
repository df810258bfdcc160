"""The bounds on one round, and how long a round holds, and waits for, its story."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RoundSettings:
    """Bounds on one round, and how long to wait for a story whose round is already being played.

    `max_refusals`: refusals (the referee's, the judge's, a tool's) a round may draw before it fails;
    `max_model_calls`: the game master's calls a round may make; `lease_seconds`: how long a dead process
    holds its story (gm.engine.lease); `heartbeat_seconds`: how often a running round renews its lease;
    `wait_seconds`: how long a round waits for a story another round is playing.
    """

    max_refusals: int = 3
    max_model_calls: int = 8
    lease_seconds: float = 20.0
    heartbeat_seconds: float = 5.0
    wait_seconds: float = 0.0
