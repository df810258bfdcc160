"""Tests of gm.dice."""
