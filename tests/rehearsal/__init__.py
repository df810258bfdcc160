"""Tests of gm.rehearsal."""
