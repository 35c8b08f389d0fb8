"""The cluster port conformance suite: one set of tests, run against every adapter."""
