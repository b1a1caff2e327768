"""Runs until decided (dfslab.sequential) keeps each verdict's error rate although it looks again
after every pair of runs: simulated through its own `sequential_test` (and so through
ratios.ratio_test) with a run effect as large as the repetition noise, 2000 trials each, bound
5 % + 2 binomial standard errors. Looking at 5 % each time, as a plain re-test would, breaks
that bound on the same simulated runs, which is why the looks share the error."""

from __future__ import annotations

import math
import random

from dfslab.ratios import ALPHA
from dfslab.sequential import Decisions, look_alphas, look_rounds, looks_text, planned_rounds, sequential_test, spent_by
from simulated_runs import rounds, runs

TRIALS = 2000
BOUND = 0.05 + 2 * math.sqrt(0.05 * 0.95 / TRIALS)
MAX = 10  # runs per side: 9 looks
POCOCK_2_LOOKS = 0.0294  # Pocock's nominal level for 2 equally spaced looks at 5 % (boundary 2.178)


def outcomes(seed: int, factor: float, **kw) -> list[tuple[str, int | None]]:
    rng = random.Random(seed)
    return [sequential_test(runs(rng, MAX, **kw), runs(rng, MAX, factor, **kw), MAX) for _ in range(TRIALS)]


def share(found: list[tuple[str, int | None]], verdict: str) -> float:
    return sum(v == verdict for v, _ in found) / len(found)


def test_different_when_nothing_differs_at_most_5_percent_over_every_look():
    assert share(outcomes(1, 1.0), "different") <= BOUND


def test_same_at_the_margin_at_most_5_percent_over_every_look():
    # B exactly 1.1x A (the margin) with little noise: "same" is the error here.
    assert share(outcomes(2, 1.1, run_sd=0.02, rep_sd=0.02), "same") <= BOUND


def test_looking_at_5_percent_each_time_would_break_the_bound():
    """The same null runs, each look at the plain 5 %: a metric is called different at some look
    far more often than 5 % (the reason the looks share the error)."""
    rng = random.Random(1)
    naive = 0
    for _ in range(TRIALS):
        a, b = runs(rng, MAX), runs(rng, MAX)
        verdict, _ = sequential_test(a, b, MAX, alpha=ALPHA, every_round=True)
        naive += verdict == "different"
    assert naive / TRIALS > 2 * BOUND


def test_what_differs_or_agrees_is_decided_within_the_runs_and_says_when():
    big = outcomes(3, 1.3)
    assert share(big, "different") > 0.8
    agree = outcomes(4, 1.0, run_sd=0.02, rep_sd=0.02)
    assert share(agree, "same") > 0.8
    took = sorted(n for v, n in agree if n)
    assert took[0] >= 2 and took[len(took) // 2] <= MAX
    print(f"B = 1.3 A: decided different in {share(big, 'different'):.1%}; agreeing runs: same in "
          f"{share(agree, 'same'):.1%}, median {took[len(took) // 2]} runs per side")


def test_decisions_keep_the_look_that_decided_each_metric():
    rows = [{"workload": "fio", "params": "{}", "metric": m, "unit": "MB/s", "verdict": v, "too_short": False}
            for m, v in (("bandwidth", "different"), ("iops", "can't tell"))]
    decisions = Decisions(MAX)
    assert decisions.schedule == [5, 10]
    first = decisions.alpha_at(5)
    assert first == look_alphas(MAX)[0] == spent_by(0.5)
    assert [r["metric"] for r in decisions.look(rows, 5, first)] == ["iops"]
    later = [{**rows[0], "verdict": "can't tell"}, {**rows[1], "verdict": "same"}]
    last = decisions.alpha_at(10)
    assert math.isclose(first + last, ALPHA)
    assert decisions.look(later, 10, last) == []
    final = {r["metric"]: (r["verdict"], r["decided_at"], r["look_alpha"]) for r in decisions.final_rows(later)}
    assert final == {"bandwidth": ("different", 5, first), "iops": ("same", 10, last)}
    assert looks_text(decisions.levels) == "looks after rounds 5 and 10 at 0.557 % and 4.44 % (of 5 %)"


def test_the_budget_stopping_the_runs_early_spends_what_is_left():
    decisions = Decisions(8)
    decisions.look([], 4, decisions.alpha_at(4))
    assert math.isclose(decisions.alpha_at(6, last=True), ALPHA - spent_by(0.5))
    assert Decisions(8).alpha_at(3, last=True) == ALPHA  # stopped before the half-way look: the only look


def test_the_half_way_look_spends_as_obrien_fleming():
    """Lan & DeMets' O'Brien-Fleming spending function at half the runs: 2 - 2 Phi(1.96 / sqrt 0.5)
    = 0.557 % of a two-sided 5 %; nothing at the start, all of it at the end."""
    assert math.isclose(spent_by(0.5), 0.005574, rel_tol=1e-3)
    assert math.isclose(spent_by(1.0), ALPHA) and spent_by(1e-9) < 1e-12
    assert [round(a, 4) for a in look_alphas(7)] == [round(spent_by(4 / 7), 4), round(ALPHA - spent_by(4 / 7), 4)]
    assert look_alphas(2) == [ALPHA]


def test_until_decided_needs_two_sides_and_says_so_before_anything_starts():
    from conftest import dfslab
    res = dfslab("run", "examples/quickstart.yaml", "--until-decided", check=False)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "runtimes" in res.stderr and "two sides" in res.stderr and "report:" not in res.stdout
    res = dfslab("run", "examples/containerized-vs-host.yaml", "--until-decided", "--runs", "3", check=False)
    assert res.returncode == 2 and "drop --runs" in res.stderr, res.stderr


def test_paired_looks_on_a_drifting_machine_hold_the_error():
    """Runs made in rounds A B / B A on a machine that drifts (each round's two runs share it; the
    second run of a round slower): from the look where pairing pays (4 rounds at either look's level), each
    look tests the rounds' log(B/A). No difference is called different, and B at the margin the
    same, at most 5 % + 2 standard errors over every look."""
    rng = random.Random(21)
    null = [sequential_test(*rounds(rng, MAX), MAX) for _ in range(TRIALS)]
    assert share(null, "different") <= BOUND
    margin = [sequential_test(*rounds(rng, MAX, 1.1, drift_sd=0.01, run_sd=0.01, rep_sd=0.01, order=0.005), MAX)
              for _ in range(TRIALS)]
    assert share(margin, "same") <= BOUND


def test_two_looks_sized_by_the_budget():
    """Looks half way and at the last round the budget allows at the first round's pace."""
    assert [look_rounds(n) for n in (2, 3, 4, 7, 10)] == [[2], [2, 3], [2, 4], [4, 7], [5, 10]]
    assert planned_rounds(3600, 480, 10) == 7 and planned_rounds(3600, 100, 10) == 10
    assert planned_rounds(600, 480, 10) == 2 and planned_rounds(float("inf"), 480, 10) == 10


def test_two_looks_decide_more_than_a_look_after_every_round():
    """Not an error rate: runs that agree within 4 % and B 3 % above A, 7 rounds. The error each
    look spends is the others' loss: two looks decide far more than a look after each round, and
    the spending function's split (most of the error at the last look, where the interval is
    narrowest) more than equal shares or Pocock's equal levels."""
    rng = random.Random(31)
    pairs = [(runs(rng, 7, run_sd=0.04, rep_sd=0.03), runs(rng, 7, 1.03, run_sd=0.04, rep_sd=0.03)) for _ in range(TRIALS)]
    two = sum(sequential_test(a, b, 7)[0] != "can't tell" for a, b in pairs) / TRIALS
    equal = sum(sequential_test(a, b, 7, alpha=ALPHA / 2)[0] != "can't tell" for a, b in pairs) / TRIALS
    pocock = sum(sequential_test(a, b, 7, alpha=POCOCK_2_LOOKS)[0] != "can't tell" for a, b in pairs) / TRIALS
    every = sum(sequential_test(a, b, 7, alpha=ALPHA / 6, every_round=True)[0] != "can't tell" for a, b in pairs) / TRIALS
    print(f"decided: two looks split by the spending function {two:.1%}, equal shares {equal:.1%}, "
          f"Pocock's {pocock:.1%}, a look after every round {every:.1%}")
    assert two > every + 0.1, (two, every)
    assert two > equal and two > pocock, (two, equal, pocock)


def until_decided_on_stand_ins(tmp_path, monkeypatch, run_seconds):
    """run_until_decided's loop, its runs made by a stand-in (each run a run directory with three
    metrics: B 1.5x A in bandwidth, iops alike, a noisy latency) on a clock each run moves
    run_seconds(i) for the i-th run; 60 min budget, at most 10 rounds. Returns (the sides in the
    order run, the result, what progress was told)."""
    from types import SimpleNamespace

    from dfslab import campaign as run_module
    from dfslab.phases import RunOutcome
    from dfslab.results import RunDir
    from dfslab.workloads import Measurement

    clock, made, rng = [0.0], [], random.Random(5)

    def stand_in(variant, progress, runs_root=None, label=None):
        clock[0] += run_seconds(len(made))
        path = tmp_path / f"{len(made):02d}-{variant}"
        path.mkdir()
        scale = 1.5 if variant == "B" else 1.0
        RunDir(path).add(Measurement("fio", metric, value, unit, {"rw": "read"}, rep)
                         for rep in range(3)
                         for metric, value, unit in (("bandwidth", 100 * scale * rng.gauss(1, 0.01), "MB/s"),
                                                     ("iops", 100 * rng.gauss(1, 0.005), "op/s"),
                                                     ("latency_avg", 100 * math.exp(rng.gauss(0, 0.5)), "ms")))
        RunDir(path).write_json("provenance.json", {"start": clock[0]})
        made.append(variant)
        return RunOutcome(path, path / "report.html")

    monkeypatch.setattr(run_module, "decision_sides", lambda exp: [("local", "A"), ("docker", "B")])
    monkeypatch.setattr(run_module, "run_experiment", stand_in)
    monkeypatch.setattr(run_module.report, "build", lambda path: None)
    monkeypatch.setattr(run_module.time, "monotonic", lambda: clock[0])
    said = []
    experiment = SimpleNamespace(name="t", file=SimpleNamespace(runtimes=["local", "docker"]))
    result = run_module.run_until_decided(experiment, lambda *a: said.append(a), 3600, 10)
    return made, result, said


def test_until_decided_runs_in_rounds_looks_twice_and_spends_the_error(tmp_path, monkeypatch):
    """Rounds A B then B A, six rounds planned from the first round's 600 s in a 60-minute budget,
    looks after rounds 3 and 6 whose levels add up to 5 %, the clear difference decided at the
    first look, the noise never."""
    from dfslab.results import RunDir
    made, result, said = until_decided_on_stand_ins(tmp_path, monkeypatch, lambda i: 300)
    assert made == ["A", "B", "B", "A"] * 3
    final = {r["metric"]: r for r in result.rows}
    assert final["bandwidth"]["verdict"] == "different" and final["bandwidth"]["decided_at"] == 3
    assert final["latency_avg"]["decided_at"] is None
    comparison = RunDir(tmp_path / "10-B").read_json("comparison.json")["sequential"]
    assert comparison["planned_rounds"] == 6 and [n for n, _ in comparison["levels"]] == [3, 6]
    assert math.isclose(sum(a for _, a in comparison["levels"]), ALPHA)
    assert comparison["levels"][0][1] == final["bandwidth"]["look_alpha"] == spent_by(0.5)
    assert any("looks after rounds 3 and 6" in text for _, text in said)
    assert result.looks.startswith("looks after rounds 3 and 6 at 0.557 % and 4.44 %")
    monkeypatch.undo()  # the report of the comparison, as the last docker run has it
    from dfslab import report
    page = report.build(tmp_path / "10-B").read_text()
    assert "tested at the looks after rounds 3 and 6 at 0.557 % and 4.44 % (of 5 %)" in page
    assert "<h2>Runtime docker against runtime local</h2>" in page
    assert "decided after 3 runs per side" in page and "not decided" in page


def test_until_decided_stopped_by_the_budget_looks_there_with_what_is_left(tmp_path, monkeypatch):
    """The first round took 300 s (10 rounds planned, looks at 5 and 10), later runs 250 s: before
    round 8 the budget would pass, so the last look is made after round 7 and spends the rest."""
    made, result, said = until_decided_on_stand_ins(tmp_path, monkeypatch, lambda i: 150 if i < 2 else 250)
    assert len(made) == 14
    assert result.looks == "looks after rounds 5 and 7 at 0.557 % and 4.44 % (of 5 %)"
    assert any(stage == "warning" and "stopping at 7 runs per side" in text for stage, text in said)


def test_a_budget_is_not_capped_at_ten_rounds(monkeypatch):
    """--budget is the limit the user set: without --max-runs the rounds it holds are planned (up
    to 50); without a budget, 10 rounds at most; --max-runs wins over both."""
    from typer.testing import CliRunner

    from dfslab import campaign as run_module
    from dfslab.cli import app
    asked = []

    def record(exp, progress, budget, max_runs, runs_root=None):
        asked.append((budget, max_runs))
        return run_module.UntilDecided([], [], "no look made")

    monkeypatch.setattr(run_module, "run_until_decided", record)
    for extra in (["--budget", "60min"], [], ["--budget", "1h", "--max-runs", "12"]):
        CliRunner().invoke(app, ["run", "examples/containerized-vs-host.yaml", "--until-decided", *extra])
    assert asked == [(3600.0, 50), (float("inf"), 10), (3600.0, 12)]
