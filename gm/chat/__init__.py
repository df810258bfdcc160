"""The terminal chat behind `gm play`."""
