"""The tools the game master calls in a round: their schemas, their arguments, and what they do."""
