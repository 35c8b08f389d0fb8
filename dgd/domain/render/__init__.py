"""Rendering: what the operator creates for a DGD, as raw JSON (dgd-domain §7–§9, podspec).

:mod:`~dgd.domain.render.pcs` (Grove) and :mod:`~dgd.domain.render.dcd` (Component pathway) both render
pods with :mod:`~dgd.domain.render.podspec`; :mod:`~dgd.domain.render.stable_resources` renders the
Services and Ingress, :mod:`~dgd.domain.render.shared_objects` the per-namespace objects, and
:mod:`~dgd.domain.render.offline` all of it for the ``render`` command.
"""
