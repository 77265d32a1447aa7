"""The embedded org served as Salesforce's REST API on this machine (the ``serve`` extra).

Any Salesforce client runs offline against it: ``simple_salesforce.Salesforce(instance_url=server.url,
session_id=hub.token)``, with ``REQUESTS_CA_BUNDLE`` pointing at the self-signed certificate. Each session
id is an isolated :class:`~crmarena_gym.org.OrgSession`.
"""

from __future__ import annotations

from crmarena_gym.org.serve._app import make_app
from crmarena_gym.org.serve._hub import SessionHub, new_token
from crmarena_gym.org.serve._rest import LATEST_VERSION, MAX_BODY_BYTES, VERSIONS
from crmarena_gym.org.serve._server import OrgServer, check_loopback
from crmarena_gym.org.serve._tls import self_signed_certificate

__all__ = [
    "LATEST_VERSION",
    "MAX_BODY_BYTES",
    "VERSIONS",
    "OrgServer",
    "SessionHub",
    "check_loopback",
    "make_app",
    "new_token",
    "self_signed_certificate",
]
