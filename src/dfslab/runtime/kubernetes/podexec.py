"""Run a command in the cluster's toolbox pod through the Kubernetes API's exec, as if it ran here.

    python -m dfslab.runtime.kubernetes.podexec CLUSTER [--client NODE] -- ARGV...

On a Kubernetes you run (existing.py) this machine has no route to Ceph: the admin helper and
`ceph ...` run in dfslab's toolbox pod instead (hostNetwork, the cluster's conf and keyring
mounted at dfslab's paths). stdin (when it is not a terminal), stdout and stderr are relayed
and the exit code is the command's; stdin's end is passed on (v5 exec protocol), which is how
the admin helper is told to quit.
"""

from __future__ import annotations

import os
import select
import sys

STDIN = 0


def run(cluster: str, argv: list[str], on: str = "client") -> int:
    from ...state import ClusterState
    from .. import attach_runtime
    from ..base import RuntimeError_
    from .existing import toolbox_name, toolbox_pod
    from .rest import exec_stream
    rt = attach_runtime(ClusterState(cluster))
    api = rt.api()
    try:
        pod = toolbox_pod(api, rt.namespace, name=toolbox_name(on))
    except RuntimeError_ as exc:
        sys.exit(str(exc))
    return relay(exec_stream(api, rt.namespace, pod, argv, stdin=True), STDIN)


def relay(ws, stdin: int) -> int:
    """stdout and stderr of the exec `ws` written here, `stdin` (when it is not a terminal) sent
    there and its end passed on; the command's exit code. A command that ends before its input
    does (`cat /proc/net/dev` with stdin at its end at once) closes the socket first: the input
    is then not wanted, and what the command said is still read and its exit code returned
    (sending into the closed socket failed the byte ledger's counter reads on a Kubernetes you run)."""
    from websocket import WebSocketConnectionClosedException
    forward = not os.isatty(stdin)
    while ws.is_open():
        ws.update(timeout=0.05)
        if ws.peek_stdout():
            sys.stdout.write(ws.read_stdout())
            sys.stdout.flush()
        if ws.peek_stderr():
            sys.stderr.write(ws.read_stderr())
            sys.stderr.flush()
        if forward and select.select([stdin], [], [], 0)[0]:
            data = os.read(stdin, 65536)
            try:
                if data:
                    ws.write_stdin(data.decode(errors="replace"))
                else:
                    ws.close_channel(0)
                    forward = False
            except WebSocketConnectionClosedException:
                forward = False  # the command has ended: its output and exit code are what is left
    rc = ws.returncode
    ws.close()
    return rc if rc is not None else 1


def main() -> None:
    args = sys.argv[1:]
    on = "client"
    if len(args) >= 3 and args[1] == "--client":
        on, args = args[2], [args[0], *args[3:]]
    if len(args) < 3 or args[1] != "--":
        sys.exit("usage: python -m dfslab.runtime.kubernetes.podexec CLUSTER [--client NODE] -- ARGV...")
    import warnings
    warnings.filterwarnings("ignore", message=r"urllib3 .* doesn't match a supported version")
    sys.exit(run(args[0], args[2:], on))


if __name__ == "__main__":
    main()
