"""A story's transcript: the public shapes of its rolls, outcomes and rounds, and the hash chain over its rolls."""
