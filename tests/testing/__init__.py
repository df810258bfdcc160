"""Tests of gm.testing."""
