"""The revisions, oldest first: initial, story_token, integrity."""
