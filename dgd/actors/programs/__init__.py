"""actors/programs."""
