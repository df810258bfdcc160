"""dice.json: checks and bands, their coverage, the table rules, naturals and chances. Pure: no I/O."""
