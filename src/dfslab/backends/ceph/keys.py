"""cephx keys as each release makes them."""

from __future__ import annotations

import base64
import os
import struct
import time

# The cephx key a release makes (its root's `ceph-authtool --gen-print-key`, decoded): AES-128
# (type 1, 16 bytes) until Squid; Tentacle makes AES-256 (type 2, 32 bytes), its monitors allow no
# other (its monmaptool writes `auth_allowed_ciphers aes256k`), and an older librados cannot use one.
AES_128 = (1, 16)
KEY_TYPES: dict[str, tuple[int, int]] = {"tentacle": (2, 32)}


def key_type(release: str) -> tuple[int, int]:
    """(cephx key type, secret bytes) of a new cluster of `release`."""
    return KEY_TYPES.get(release, AES_128)


def gen_key(release: str) -> str:
    """A cephx secret of the kind `release` makes, encoded as Ceph's CryptoKey: type, created
    (sec, nsec), length, bytes."""
    kind, size = key_type(release)
    secret = os.urandom(size)
    header = struct.pack("<hiih", kind, int(time.time()), 0, len(secret))
    return base64.b64encode(header + secret).decode()
