"""gpumem: a static-site generator for GPU-memory guides for LLMs."""
