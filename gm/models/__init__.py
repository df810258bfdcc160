"""Language models: the OpenAI-compatible client, the answer reader, text tool calls and the model check."""
