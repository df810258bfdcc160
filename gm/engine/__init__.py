"""The round engine: a game of stories, a round from player text to stored outcome, and its parts."""
