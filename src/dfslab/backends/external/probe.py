"""Is an endpoint the spec lists there? Answered before anything runs, with the field's name."""

from __future__ import annotations

import socket
import urllib.request

# The ports the site's tools listen on unless an endpoint names one: fio's server and iperf3's.
FIO_PORT, IPERF_PORT = 8765, 5201


def split_endpoint(endpoint: str, default_port: int) -> tuple[str, int]:
    """fio's `host,port` (or host:port) as (host, port)."""
    for sep in (",", ":"):
        if sep in endpoint:
            host, _, port = endpoint.rpartition(sep)
            return host, int(port)
    return endpoint, default_port


def tcp_answers(host: str, port: int, timeout: float = 3) -> str | None:
    """None if something accepts connections there, else why not."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except OSError as exc:
        return f"{host}:{port}: {exc.strerror or exc}"


def http_answers(url: str, timeout: float = 3) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as reply:  # noqa: S310 (a URL the user gave)
            reply.read(1)
        return None
    except OSError as exc:
        return f"{url}: {exc}"
