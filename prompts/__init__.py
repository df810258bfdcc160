"""The models' instructions as text files, installed with the package as `gm.prompts` (see pyproject.toml).

`gm.engine.instructions` reads them; `GM_PROMPTS` or `--prompts DIR` points gm at an edited copy instead.
"""
