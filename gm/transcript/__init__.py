"""A story's transcript: the public shapes of its rolls, outcomes, rounds and integrity."""
