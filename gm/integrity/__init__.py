"""Dice integrity: the hash chain over a story's rolls, fair dice, secret rolls, seeds and the audit."""
