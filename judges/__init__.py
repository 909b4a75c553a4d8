"""LLM judges (through the openai client) and their offline stand-ins. Filled by the judges issue."""
