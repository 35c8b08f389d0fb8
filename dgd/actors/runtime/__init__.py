"""actors/runtime."""
