"""Reaching a server that listens only inside one of dfslab's network namespaces (the local
Kubernetes API server) from dfslab's own process, without a route from the host.

A listening socket on 127.0.0.1 (an ephemeral port) in dfslab's process; each connection is
relayed to a socket created by a thread that entered the namespace (setns acts on the calling
thread only, and a socket keeps the namespace it was made in). Traffic stays on loopback and
inside the namespace; the relay lives and dies with the dfslab process, nothing is left.
"""

from __future__ import annotations

import ctypes
import os
import queue
import socket
import threading

CLONE_NEWNET = 0x40000000


def _setns(path: str) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(path, os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns({path}): {os.strerror(err)}")
    finally:
        os.close(fd)


class NamespaceRelay:
    """127.0.0.1:<port> in this process -> (host, port) inside the network namespace `netns_path`."""

    def __init__(self, netns_path: str, host: str, port: int):
        self.target = (host, port)
        self._requests: queue.Queue = queue.Queue()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        threading.Thread(target=self._dialer, args=(netns_path,), daemon=True, name="netns-dialer").start()
        self._ready.wait(10)
        if self._error:
            raise self._error
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True, name="netns-relay").start()

    def _dialer(self, netns_path: str) -> None:
        try:
            _setns(netns_path)
        except BaseException as exc:  # reported to the constructor
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        while True:
            reply = self._requests.get()
            try:
                reply.put(socket.create_connection(self.target, timeout=10))
            except OSError as exc:
                reply.put(exc)

    def dial(self) -> socket.socket:
        reply: queue.Queue = queue.Queue()
        self._requests.put(reply)
        got = reply.get()
        if isinstance(got, BaseException):
            raise got
        got.settimeout(None)
        return got

    def _accept(self) -> None:
        while True:
            conn, _ = self.listener.accept()
            try:
                upstream = self.dial()
            except OSError:
                conn.close()
                continue
            for a, b in ((conn, upstream), (upstream, conn)):
                threading.Thread(target=_pump, args=(a, b), daemon=True).start()


def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def main() -> None:
    """A relay that outlives dfslab's command (the local Kubernetes's admin kubeconfig points at
    it): `python -m dfslab.runtime.kubernetes.netns_socket NETNS HOST PORT PORT_FILE`; the port
    it listens on (127.0.0.1) goes to PORT_FILE. dfslab tracks it and `down` stops it."""
    import signal
    import sys
    netns, host, port, port_file = sys.argv[1:5]
    relay = NamespaceRelay(netns, host, int(port))
    with open(port_file + ".tmp", "w") as fh:
        fh.write(str(relay.port))
    os.rename(port_file + ".tmp", port_file)
    while True:
        signal.pause()


if __name__ == "__main__":
    main()
