"""The PostgreSQL server the tests may use beside SQLite."""

from __future__ import annotations

import os

POSTGRES_URL = os.environ.get("GM_TEST_POSTGRES_URL")  # unset: the PostgreSQL tests skip, saying so
NO_POSTGRES = "GM_TEST_POSTGRES_URL is not set"  # the skip reason, which the summary counts
