"""Tests of gm.chat."""
