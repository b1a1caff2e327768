"""What two sides of a comparison can show: B/A with a 95 % interval, and a verdict that never
claims more than the runs support.

The unit is the run. Repetitions inside one run share its cluster (PG placement, the state of
its disk images) and its hour on a shared machine; two runs of one spec 30 min apart differed
here in 29 of 57 headline metrics. So:

- one run per side: the interval counts that run's repetitions and is labelled "within one
  run"; no verdict of difference (simulated with a run effect as large as the repetition noise,
  such intervals flagged 19 % of null metrics at 3 repetitions, 36 % at 5);
- two or more runs on a side (equal or not: 2 vs 1, 3 vs 2): each run is one value (the
  geometric mean of its repetitions) and the test is over runs: Welch's t on log values where
  both sides have 2 or more, the pooled-variance t where one side has a single run (its spread
  taken from the other side's runs);
- "different" when the 95 % interval excludes 1 (said with its direction, and "within ±M %" too
  when it is also inside the margin: a real 5 % difference is both); equivalence is a verdict of
  its own otherwise (two one-sided tests, TOST): "same within ±M %" when the 90 % interval lies
  inside [1/(1+M), 1+M]; else "can't tell", with how many runs per side would decide it.

Runs made in rounds (A B, then B A: `runs:` and `--until-decided`) are tested as pairs once
there are enough rounds: each round's B/A is one value, and what drifts over the hour (the
machine's disk, page cache, other tenants) falls on both runs of a round and cancels. Measured on
containerized-vs-host (local vs docker, 6 rounds): the variance of a round's log(B/A) was a median
0.37 of the unpaired difference's over its 22 headline metrics. A paired test has n - 1 degrees
of freedom instead of 2n - 2, so it pays only from a number of rounds that depends on the level
(`pairing_pays`, decided from n and alpha alone, never from the data: choosing the narrower
interval after seeing both would not hold the error).

Ratios are of geometric means (throughputs and latencies vary by a factor, not an amount), so
the ratio shown is the one its interval is for. scipy gives the t quantiles (a well-kept
implementation instead of the hand-written incomplete beta function this replaced): its
special.stdtrit, the function scipy.stats.t.ppf evaluates, called directly because the
simulations that check these verdicts run it hundreds of thousands of times and t.ppf's argument
handling took 70 % of their time.
tests/test_verdict_unit.py simulates each verdict's error rate through this code."""

from __future__ import annotations

import functools
import math
import statistics
from dataclasses import asdict, dataclass
from typing import Sequence

from scipy import special

ALPHA = 0.05  # both the difference test (two-sided 95 %) and each one-sided test of TOST
POWER = 0.8  # for the smallest detectable ratio
MAX_RUNS = 50  # beyond this, "more than 50 runs per side": the difference is too close to the margin


def t_quantile(q: float, df: float) -> float:
    """Student's t quantile: scipy.stats.t.ppf(q, df), without its per-call argument handling."""
    return float(special.stdtrit(df, q))


@dataclass
class RatioTest:
    ratio: float | None  # B/A of geometric means: what the interval is for (None: undefined)
    low: float | None  # 95 % interval of the ratio
    high: float | None
    over: str  # "runs" | "one run" (repetitions of one run per side) | "" (no interval)
    verdict: str  # "different" | "same" | "can't tell"
    why: str  # what the verdict rests on, or why there is no interval / no verdict
    detectable: float | None = None  # the smallest ratio (> 1) these runs would detect at 80 % power
    runs_needed: int | None = None  # runs per side that would decide a "can't tell"
    # Over runs: log(B/A), its standard error and degrees of freedom, for tests beyond the
    # verdict (the --fail-if-worse gate's one-sided tests); None within one run.
    log_ratio: float | None = None
    se: float | None = None
    df: float | None = None
    # Whether it claims B within ±margin of A (two one-sided tests): a "same", and a "different"
    # that is inside the margin too. The claim's error where B is at the margin is TOST's, 5 % at
    # most, whichever verdict carries it (tests/test_verdict_unit.py counts both).
    within: bool = False

    @property
    def significant(self) -> bool:
        return self.verdict == "different"

    def fields(self) -> dict:
        return {**asdict(self), "significant": self.significant}


def geometric_mean(values: Sequence[float]) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values))


def run_values(runs: Sequence[Sequence[float]]) -> list[float]:
    """Each run as one value: the geometric mean of its repetitions."""
    return [geometric_mean(run) for run in runs]


# The paired variance taken as half the unpaired (0.37 measured, see above) to decide from how
# many rounds pairing pays: at 5 % from 4 rounds; at until-decided's half-way 0.56 % from 6, at its
# last look's 4.44 % from 4.
PAIRED_GAIN = 0.5


def pairing_pays(rounds: int, alpha: float = ALPHA) -> bool:
    """Whether `rounds` pairs are tested as pairs at level `alpha`: the paired interval is expected
    narrower, its t quantile on rounds - 1 degrees of freedom against the unpaired one's on
    2 rounds - 2, at PAIRED_GAIN of the variance."""
    if rounds < 3:
        return False
    paired, unpaired = t_quantile(1 - alpha / 2, rounds - 1), t_quantile(1 - alpha / 2, 2 * rounds - 2)
    return (paired / unpaired) ** 2 * PAIRED_GAIN < 1


def ratio_test(runs_a: Sequence[Sequence[float]], runs_b: Sequence[Sequence[float]], margin: float = 0.10,
               alpha: float = ALPHA, rounds: bool = False) -> RatioTest:
    """B against A, each a list of runs, each run a list of repetitions (see the module's doc).
    `alpha`: the error of each test (a sequential comparison spends a share of ALPHA per look);
    `rounds`: run i of A and run i of B were made in one round (tested as pairs where that pays)."""
    values = [v for run in (*runs_a, *runs_b) for v in run]
    if min(values) <= 0:
        return RatioTest(None, None, None, "", "can't tell", "a value is 0 or below: a ratio of geometric means "
                                                             "needs positive values")
    if len(runs_a) == 1 and len(runs_b) == 1:
        return _within_one_run(runs_a[0], runs_b[0])
    return _over_runs([math.log(v) for v in run_values(runs_a)], [math.log(v) for v in run_values(runs_b)], margin,
                      alpha, rounds and len(runs_a) == len(runs_b) and pairing_pays(len(runs_a), alpha))


def _within_one_run(a: Sequence[float], b: Sequence[float]) -> RatioTest:
    ratio = geometric_mean(b) / geometric_mean(a)
    la, lb = [math.log(v) for v in a], [math.log(v) for v in b]
    advice = "compare 2 or more runs per side (dfslab run EXP --runs 3)"
    if len(la) < 2 or len(lb) < 2:
        return RatioTest(ratio, None, None, "", "can't tell", f"one run per side, 1 repetition: no interval; {advice}")
    diff, se, df = _welch(la, lb)
    why = f"one run per side: the interval is within one run and cannot see run-to-run variation; {advice}"
    if se == 0:
        return RatioTest(ratio, None, None, "", "can't tell", f"every repetition gave the same value: no spread; {why}")
    half = t_quantile(1 - ALPHA / 2, df) * se
    return RatioTest(ratio, math.exp(diff - half), math.exp(diff + half), "one run", "can't tell", why)


def _welch(la: Sequence[float], lb: Sequence[float]) -> tuple[float, float, float]:
    """Difference of means, its standard error and Welch's degrees of freedom."""
    va, vb = _variance(la) / len(la), _variance(lb) / len(lb)
    diff = statistics.fmean(lb) - statistics.fmean(la)
    if va + vb == 0:
        return diff, 0.0, len(la) + len(lb) - 2
    df = (va + vb) ** 2 / (va ** 2 / (len(la) - 1) + vb ** 2 / (len(lb) - 1))
    return diff, math.sqrt(va + vb), df


def _variance(values: Sequence[float]) -> float:
    """The sample variance in floats (statistics.variance's exact fractions cost the simulations
    that check these verdicts a third of their time; log values need no more than floats)."""
    mean = statistics.fmean(values)
    return sum((x - mean) ** 2 for x in values) / (len(values) - 1)


def _within_ss(la: Sequence[float], lb: Sequence[float]) -> float:
    """Sum of squared deviations of each side's values from that side's own mean."""
    return sum((x - mean) ** 2 for side in (la, lb) for mean in (statistics.fmean(side),) for x in side)


def _pooled(la: Sequence[float], lb: Sequence[float]) -> tuple[float, float, float]:
    """As _welch, for a side with one run: the spread of runs comes from the side that has several."""
    ss = _within_ss(la, lb)
    df = len(la) + len(lb) - 2
    se = math.sqrt(ss / df * (1 / len(la) + 1 / len(lb)))
    return statistics.fmean(lb) - statistics.fmean(la), se, df


def _paired(la: Sequence[float], lb: Sequence[float]) -> tuple[float, float, float]:
    """As _welch, over each round's log(B/A)."""
    rounds = [b - a for a, b in zip(la, lb)]
    return statistics.fmean(rounds), math.sqrt(_variance(rounds) / len(rounds)), len(rounds) - 1


def _over_runs(la: list[float], lb: list[float], margin: float, alpha: float = ALPHA, paired: bool = False) -> RatioTest:
    if paired:
        diff, se, df = _paired(la, lb)
    else:
        diff, se, df = (_welch if len(la) >= 2 and len(lb) >= 2 else _pooled)(la, lb)
    ratio = math.exp(diff)
    counted = f"over runs ({len(la)} and {len(lb)}{', paired by round' if paired else ''})"
    if se == 0:
        return RatioTest(ratio, None, None, "", "can't tell", f"every run gave the same value: no spread to test {counted}")
    # Half-widths of the difference test's interval (95 % at ALPHA) and of TOST's (90 %).
    half_diff, half_same = t_quantile(1 - alpha / 2, df) * se, t_quantile(1 - alpha, df) * se
    bound = math.log1p(margin)
    detectable = math.exp((t_quantile(1 - alpha / 2, df) + t_quantile(POWER, df)) * se)
    low, high = math.exp(diff - half_diff), math.exp(diff + half_diff)
    tested = {"log_ratio": diff, "se": se, "df": df}
    within = abs(diff) + half_same < bound  # two one-sided tests: the 90 % interval inside ±margin
    if abs(diff) > half_diff:  # "different" is what the interval excluding 1 means, even inside the margin
        both = f", and within ±{margin * 100:g} % (two one-sided tests)" if within else ""
        return RatioTest(ratio, low, high, "runs", "different",
                         f"{abs(ratio - 1) * 100:.0f} % {'higher' if diff > 0 else 'lower'} ({_level(alpha)} interval "
                         f"{low:.3f}-{high:.3f} excludes 1){both} {counted}", detectable, within=within, **tested)
    if within:
        return RatioTest(ratio, low, high, "runs", "same", f"same within ±{margin * 100:g} % ({_level(2 * alpha)} interval "
                         f"{math.exp(diff - half_same):.3f}-{math.exp(diff + half_same):.3f}, two one-sided tests) {counted}",
                         detectable, within=True, **tested)
    # paired: a round's spread as a run's (log(B/A) varies as two runs do)
    sd = _upper(se * math.sqrt(len(la) / 2), df) if paired else _run_sd(la, lb)
    needed = runs_to_decide(abs(diff), sd, bound, alpha)
    more = f"about {needed} runs per side would decide it" if needed else f"more than {MAX_RUNS} runs per side would be needed"
    return RatioTest(ratio, low, high, "runs", "can't tell", f"{more} (±{margin * 100:g} % margin) {counted}",
                     detectable, needed, **tested)


def _level(alpha: float) -> str:
    """An interval's confidence: "95 %", or "99.44 %" for a sequential look's share of the error."""
    return f"{100 * (1 - alpha):.4g} %"


# A standard deviation from 2-3 runs per side is often far too small; sizing on it, the runs a
# "can't tell" asked for decided it 39-57 % of the time in simulation (tests/test_verdict_unit.py),
# on its 70 % upper confidence bound 53-78 %.
SD_UPPER = 0.7


def _run_sd(la: Sequence[float], lb: Sequence[float]) -> float:
    """Run-to-run standard deviation of log values, pooled over both sides: its upper 70 %
    confidence bound (chi-square), so that the runs it sizes mostly do decide."""
    df = len(la) + len(lb) - 2
    return _upper(math.sqrt(_within_ss(la, lb) / df), df)


def _upper(sd: float, df: float) -> float:
    """A standard deviation estimated on `df` degrees of freedom: its upper SD_UPPER confidence bound."""
    return sd * math.sqrt(df / special.chdtri(df, SD_UPPER))  # stats.chi2.ppf(1 - SD_UPPER, df)


def runs_to_decide(diff: float, sd: float, bound: float, alpha: float = ALPHA) -> int | None:
    """Runs per side at which, were the difference `diff` (log scale) and the run-to-run spread
    `sd` what they seem, an interval would exclude 1 or lie inside ±bound with 80 % power: the
    usual sample size, (t_alpha + t_power) x sd x sqrt(2/n) below the larger of the two gaps."""
    gap = max(diff, bound - diff)
    for n in range(2, MAX_RUNS + 1):
        if _sizing_factor(n, alpha) * sd < gap:
            return n
    return None


@functools.cache
def _sizing_factor(n: int, alpha: float = ALPHA) -> float:
    """(t_alpha + t_power) x sqrt(2/n) at n runs per side (2n - 2 degrees of freedom)."""
    df = 2 * n - 2
    return (t_quantile(1 - alpha / 2, df) + t_quantile(POWER, df)) * math.sqrt(2 / n)
