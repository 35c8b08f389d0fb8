"""Admission: what the API server's schema, CEL rules and the operator's webhooks decide (supplement §4).

:mod:`~dgd.domain.admission.defaulting` (the mutating webhook), :mod:`~dgd.domain.admission.validation`
and :mod:`~dgd.domain.admission.components` (the validating webhook and CEL rules),
:mod:`~dgd.domain.admission.schema` (every schema problem at once), :mod:`~dgd.domain.admission.documents`
(any manifest document, for ``validate``).
"""
