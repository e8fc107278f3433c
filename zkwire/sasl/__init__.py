"""SASL mechanisms for ZooKeeper sessions (``open_client(sasl=...)``).

* :class:`~zkwire.sasl.digest.DigestMD5` -- DIGEST-MD5 (RFC 2831), what ZooKeeper's
  ``DigestLoginModule`` serves; standard library only.
* :class:`~zkwire.sasl.kerberos.Kerberos` -- GSSAPI (Kerberos V5, RFC 4752), through the ``gssapi``
  package (the ``kerberos`` extra: ``pip install 'zkwire[kerberos]'``), imported only when one is made.

A mechanism is a :class:`~zkwire.sasl.mechanism.SaslMechanism`: the session core runs the exchange on
every connection and asks it only for tokens.  This package imports nothing of the session or the trio
layer.
"""

from __future__ import annotations

from .digest import DigestMD5
from .kerberos import Kerberos, KerberosUnavailableError
from .mechanism import MAX_SASL_ROUNDS, SaslExchange, SaslMechanism

__all__ = ["DigestMD5", "Kerberos", "KerberosUnavailableError", "SaslExchange", "SaslMechanism", "MAX_SASL_ROUNDS"]
