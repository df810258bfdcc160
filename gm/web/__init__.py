"""The web side: the story API, the play page, and the editor mounted beside them (`gm serve`)."""
