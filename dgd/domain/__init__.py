"""Pure rules over the messages, grouped by concern. No clock, no random, no I/O.

* :mod:`dgd.domain.render` — a DGD to its PodCliqueSet, DCDs, pod specs, Services and shared objects;
* :mod:`dgd.domain.conversion` — v1alpha1 <-> v1beta1;
* :mod:`dgd.domain.admission` — defaulting and validation, as the webhooks decide them;
* here: the state machines and decisions the actors follow (readiness, rollout, restart, checkpoint,
  adapters, provider, projection of the status, sync decisions, events) and the names and keys they share.
"""
