"""Tests of gm.rules."""
