"""Admission: what the API server's schema, CEL rules and the operator's webhooks decide (supplement §4).

:mod:`~dgd.domain.admission.defaulting` (the mutating webhook), :mod:`~dgd.domain.admission.validation`
and :mod:`~dgd.domain.admission.components` (the validating webhook and CEL rules),
:mod:`~dgd.domain.admission.schema` (every schema problem at once), :mod:`~dgd.domain.admission.documents`
(any manifest document, for ``validate``); for the webhook beyond create: :mod:`~dgd.domain.admission.update`
(DGD updates, with :mod:`~dgd.domain.admission.component_updates` shared with DCDs and
:mod:`~dgd.domain.admission.principals` for the exempt requesters), :mod:`~dgd.domain.admission.dcd` and
:mod:`~dgd.domain.admission.checkpoint`; the pod checkpoint-restore mutator:
:mod:`~dgd.domain.admission.pod_restore`.
"""
