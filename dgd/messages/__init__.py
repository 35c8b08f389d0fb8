"""Pure data: every type that crosses an actor boundary or the API. No I/O here."""
