"""The in-memory API server served over the Kubernetes REST API (``dgd-operator sim serve``).

:mod:`~dgd.sim.apiserver.server` (the aiohttp application) routes to
:mod:`~dgd.sim.apiserver.resources` (CRUD, subresources; PATCH in :mod:`~dgd.sim.apiserver.patch_verb`,
the patch flavours in :mod:`~dgd.sim.apiserver.patch`),
:mod:`~dgd.sim.apiserver.watch` (watch streaming), :mod:`~dgd.sim.apiserver.catalog` (discovery),
:mod:`~dgd.sim.apiserver.openapi`, :mod:`~dgd.sim.apiserver.table` (kubectl tables),
:mod:`~dgd.sim.apiserver.conversion` (versions served but not stored),
:mod:`~dgd.sim.apiserver.events` and :mod:`~dgd.sim.apiserver.wire` (JSON and Status bodies).
Only ``sim serve`` and the tests use it.
"""
