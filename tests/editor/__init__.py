"""Tests of gm.editor (the world editor, in editor/)."""
