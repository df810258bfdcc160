"""An offline stand-in for the game master's model, so a world can be rehearsed without one."""
