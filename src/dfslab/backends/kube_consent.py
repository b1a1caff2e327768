"""Faults on a Kubernetes you run: a kind the filesystem's engine can inject there is allowed only
with the owner's consent (`kubernetes.allow_faults`); a kind that would act on what is not
dfslab's is refused with its reason. Each engine (Rook's, GlusterFS's) names its two lists."""

from __future__ import annotations

from ..registry import fault_owner


def consent_refusal(spec, kind: str, consented: tuple[str, ...], not_on_yours: dict[str, str]) -> str | None:
    """Why fault `kind` may not be injected into a cluster of `spec` on a Kubernetes you run (None: it may)."""
    if fault_owner(kind) not in (None, spec.filesystem):
        return None  # another filesystem's kind: the fault check says whose
    if kind in consented:
        return None if kind in spec.kubernetes.allow_faults else (
            f"fault {kind} on a Kubernetes you run needs the owner's consent: list it under kubernetes.allow_faults")
    if kind not in not_on_yours:
        return None  # not this engine's, or not this runtime's: the generic checks say which
    return (f"fault {kind}: not on a Kubernetes you run ({not_on_yours[kind]}); there: "
            f"{', '.join(consented)} under kubernetes.allow_faults")
