"""Tests of gm.store."""
