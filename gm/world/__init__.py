"""A world: world.json and dice.json checked together, loaded from a folder, and its calendar."""
