"""The simulated cluster's conversion webhook: the operator's own, called in process.

``webhook_conversion`` is the ``Conversion`` the HTTP facade calls for every object of a CRD version
it serves but does not store (nvidia.com/v1alpha1 DGDs, DCDs, DGDSAs): one ConversionReview through
the handler the daemon serves over HTTPS (``dgd.domain.admission.webhooks.CONVERTER``). A review that
fails raises a ``ValueError`` with the webhook's message, which the facade answers as the API server
does (500, ``conversion webhook for ... returned failure: ...``). So ``sim serve`` and kubectl accept
and show v1alpha1 objects as a cluster with the operator's conversion webhook does.
"""

from __future__ import annotations

from dgd.domain.admission.webhooks import CONVERTER
from dgd.messages.admission import ConversionRequest
from dgd.messages.base import JSONObject


def webhook_conversion(obj: JSONObject, to: str) -> JSONObject:
    """``obj`` as apiVersion ``to``, converted by the operator's conversion webhook."""
    response = CONVERTER(ConversionRequest(uid="simulated", desired_api_version=to, objects=[obj]))
    if response.result.status != "Success" or len(response.converted_objects) != 1:
        raise ValueError(response.result.message or "the conversion webhook converted nothing")
    return response.converted_objects[0]
