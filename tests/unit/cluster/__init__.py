"""Unit tests of dgd.cluster internals (selectors, merge patch, errors, registry, memory store)."""
