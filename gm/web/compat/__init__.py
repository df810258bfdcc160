"""gm as an OpenAI-compatible model for chat front ends (Open WebUI, SillyTavern)."""
