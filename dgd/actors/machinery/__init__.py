"""The machinery every controller of the operator runs on: the informer cache and its reader, the
router, the controller loop (retries, workers), the event recorder and the syncer."""
