"""Runs of a benchmark as the verdict simulations draw them: each run a fresh cluster at another
hour (a run effect, log-normal) and repetitions inside it (noise around the run's level)."""

from __future__ import annotations

import math
import random


def runs(rng: random.Random, n: int, factor: float = 1.0, run_sd: float = 0.1, rep_sd: float = 0.1, reps: int = 3):
    out = []
    for _ in range(n):
        shift = rng.gauss(0, run_sd)
        out.append([100 * factor * math.exp(shift + rng.gauss(0, rep_sd)) for _ in range(reps)])
    return out


def rounds(rng: random.Random, n: int, factor: float = 1.0, drift_sd: float = 0.05, run_sd: float = 0.03,
           rep_sd: float = 0.03, order: float = 0.02, reps: int = 3):
    """Runs of two sides made in rounds (A B, then B A, ...) on a machine that drifts: a random walk
    of `drift_sd` per round that both runs of a round share, a run effect of their own, and the
    second run of a round `order` slower (in log) than it would have been first."""
    level, out_a, out_b = 0.0, [], []
    for i in range(n):
        level += rng.gauss(0, drift_sd)
        first_a = i % 2 == 0
        for side, out, f in (("a", out_a, 1.0), ("b", out_b, factor)):
            late = order if (side == "b") == first_a else 0.0
            shift = level + rng.gauss(0, run_sd) - late
            out.append([100 * f * math.exp(shift + rng.gauss(0, rep_sd)) for _ in range(reps)])
    return out_a, out_b
