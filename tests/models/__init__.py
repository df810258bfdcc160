"""Tests of gm.models."""
