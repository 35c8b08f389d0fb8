"""actors/children."""
