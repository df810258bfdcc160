"""Tests of gm.integrity."""
