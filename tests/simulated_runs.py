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
