"""Conversion between v1alpha1 and v1beta1 DGDs (supplement §1).

:mod:`~dgd.domain.conversion.dgd` converts a document; :mod:`~dgd.domain.conversion.component`,
:mod:`~dgd.domain.conversion.podtemplate`, :mod:`~dgd.domain.conversion.preservation` and
:mod:`~dgd.domain.conversion.payload` convert its parts and keep what v1beta1 cannot hold;
:mod:`~dgd.domain.conversion.alpha_view` reads that back for rendering.
"""
