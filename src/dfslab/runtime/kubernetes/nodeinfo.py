"""What a `V1Node` says of itself: Ready or not, its address. Plain functions of the API's
objects, used by the control plane's wait and by the tables and checks that list nodes."""

from __future__ import annotations


def node_ready(node) -> bool:
    """A `V1Node` whose Ready condition is True."""
    return any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])


def internal_ip(node) -> str:
    """A `V1Node`'s InternalIP ('' if it reports none)."""
    return next((a.address for a in node.status.addresses or [] if a.type == "InternalIP"), "")
