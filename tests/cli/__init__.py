"""Tests of gm.cli."""
