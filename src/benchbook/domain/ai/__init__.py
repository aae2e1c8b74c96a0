"""The AI assistant: settings and the key (``config``), OpenAI-compatible clients and their
errors (``providers``), the model router login (``router``), the service's read tools
(``tools``), the chat loop (``chat``) and token usage (``usage``)."""
