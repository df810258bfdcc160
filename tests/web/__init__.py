"""Tests of gm.web."""
