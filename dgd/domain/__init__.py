"""Pure rules over the messages: validation, defaulting, conversion, naming. No clock, no I/O."""
