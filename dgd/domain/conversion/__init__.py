"""Conversion between v1alpha1 and v1beta1 DGDs, DCDs and DGDSAs (supplement §1).

``convert`` (:mod:`~dgd.domain.conversion.review`) is the one entry point the conversion webhook
calls. :mod:`~dgd.domain.conversion.dgd` converts a DGD to v1beta1 and
:mod:`~dgd.domain.conversion.view` back to v1alpha1; :mod:`~dgd.domain.conversion.dcd` and
:mod:`~dgd.domain.conversion.dgdsa` convert the other kinds both ways.
:mod:`~dgd.domain.conversion.component`, :mod:`~dgd.domain.conversion.service`,
:mod:`~dgd.domain.conversion.podtemplate`, :mod:`~dgd.domain.conversion.layout`,
:mod:`~dgd.domain.conversion.status` and :mod:`~dgd.domain.conversion.preservation` convert the
parts and keep what the other version cannot hold, in the payloads of
:mod:`~dgd.domain.conversion.payload`; :mod:`~dgd.domain.conversion.alpha_view` reads those back
for rendering.
"""

from dgd.domain.conversion.review import convert
from dgd.domain.conversion.shapes import ConversionError

__all__ = ["ConversionError", "convert"]
