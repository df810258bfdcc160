"""Tests of gm.world."""
