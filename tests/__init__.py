"""gm's tests, in folders that mirror the package tree; shared helpers live in tests/support/."""
