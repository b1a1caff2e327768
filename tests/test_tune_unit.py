"""`dfslab tune` without a cluster: the objective names one step and one measurement, the
default configuration, and the search itself (Optuna's grid + successive halving) on simulated
settings whose true values are known, so whether it finds the best one can be counted."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import yaml

from dfslab import tune as tune_mod
from dfslab.experiment import parse_experiment
from dfslab.spec import SpecError
from dfslab.tune import Objective, TuneError, default_settings
from dfslab.workloads import Measurement

CLUSTER = {"name": "t-tune", "nodes": 2,
           "ceph": {"replica_size": [1, 2], "osd_size": "1GiB", "pg_num": 8, "cephfs": False,
                    "conf": {"osd": {"osd_max_backfills": [1, 2, 3, 4]}}}}
WORKLOADS = [{"type": "fio", "target": "rbd", "rw": ["randwrite", "write"], "bs": ["4KiB", "1MiB"], "seconds": 2},
             {"type": "radosbench", "mode": ["write", "seq"], "seconds": 2}]


def experiment(tmp_path: Path, **extra) -> Path:
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump({"name": "t-tune", "cluster": CLUSTER, "workloads": WORKLOADS, **extra}))
    return path


def steps(tmp_path: Path):
    return parse_experiment(yaml.safe_load(experiment(tmp_path).read_text()), tmp_path)


def test_an_objective_names_one_step_with_parameters_parsed_as_the_workload_does(tmp_path):
    exp = steps(tmp_path)
    step = Objective.parse("fio bs=4KiB rw=randwrite iops", True).step_of(exp)
    assert step.params.bs == 4096 and step.params.rw == "randwrite"
    assert Objective.parse("fio bs=4096B rw=randwrite iops", True).step_of(exp) is step  # same value, other spelling
    assert Objective.parse("radosbench mode=write bandwidth", True).step_of(exp).workload.name == "radosbench"
    with pytest.raises(SpecError, match="matches 2 of the experiment's workload steps"):
        Objective.parse("fio rw=randwrite iops", True).step_of(exp)
    with pytest.raises(SpecError, match="bs=huge is not a valid fio bs"):
        Objective.parse("fio bs=huge rw=write iops", True).step_of(exp)
    for bad in ("iops", "fio bs=4KiB", "fio rw write iops"):
        with pytest.raises(SpecError, match="WORKLOAD \\[PARAM=VALUE ...\\] METRIC"):
            Objective.parse(bad, False)


def test_the_value_is_the_one_matching_measurement_else_a_clear_error(tmp_path):
    exp = steps(tmp_path)
    objective = Objective.parse("radosbench mode=write bandwidth", True)
    step = objective.step_of(exp)
    rows = [Measurement("radosbench", "bandwidth", 150.0, "MB/s", {"mode": "write"}),
            Measurement("radosbench", "bandwidth", 600.0, "MB/s", {"mode": "seq"}),
            Measurement("radosbench", "bandwidth", 149.0, "MB/s", {"mode": "write"}, t=1.0)]  # a per-second sample
    assert objective.value(step, rows) == 150.0
    with pytest.raises(TuneError, match="its metrics are bandwidth"):
        Objective.parse("radosbench mode=write iops", True).value(step, rows)
    with pytest.raises(TuneError, match="narrow it with PARAM=VALUE"):
        Objective.parse("radosbench bandwidth", True).value(step, rows)


def test_the_default_configuration_is_each_swept_path_left_out(tmp_path):
    one, two = [{"name": n} for n in "abc"], [{"name": n} for n in "abcd"]
    data = {"name": "d", "nodes": [one, two], "ceph": {"replica_size": [1, 2], "conf": {"osd": {"osd_max_backfills": [3, 5]}}}}
    from dfslab.experiment import cluster_axes
    shown, spec_data = default_settings(data, cluster_axes(data), "t")
    # nodes has no default: its first value; the others as if not written (dfslab's and Ceph's defaults)
    assert shown == {"nodes": one, "ceph.replica_size": "default", "ceph.conf.osd.osd_max_backfills": "default"}
    assert spec_data == {"name": "d", "nodes": one, "ceph": {"conf": {"osd": {}}}}
    # where the default does not fit the rest (replica 3 on one node), the first value is the default
    shown, _ = default_settings({**data, "nodes": [[{"name": "a"}], two]}, cluster_axes({**data, "nodes": [[{"name": "a"}], two]}), "t")
    assert shown["ceph.replica_size"] == 1


class Simulated:
    """Settings with known true means and a noise of `sd` (relative), measured without a cluster."""

    def __init__(self, search, truth, sd: float, rng: random.Random, seconds_per_rep: float = 12.0):
        self.search, self.truth, self.sd, self.rng, self.cost = search, truth, sd, rng, seconds_per_rep
        self.reps_spent = 0

    def __call__(self, switcher, progress, cluster_data, label, settings, report_to=None):
        values: list[float] = []
        mean = self.truth(settings)
        for _ in range(self.search.reps):
            self.search.start -= self.cost  # the budget's clock advances as a real repetition would
            self.reps_spent += 1
            if tune_mod.heard(values, mean * (1 + self.rng.gauss(0, self.sd)), report_to):
                break
        return values, type("Outcome", (), {"path": Path(label), "failures": []})(), "unchanged", 0.0


def search_once(tmp_path: Path, seed: int, sd: float, budget: float = 3600):
    search = tune_mod._prepare(experiment(tmp_path), Objective.parse("radosbench mode=write bandwidth", True),
                               budget, 4, None)
    best_value = {(2, 3): 150.0}  # one setting of eight is 1.5x the others

    def truth(settings):
        return best_value.get((settings["ceph.replica_size"], settings["ceph.conf.osd.osd_max_backfills"]), 100.0)

    sim = Simulated(search, truth, sd, random.Random(seed))
    search.measure = sim
    trials, failures, how = tune_mod._search(search, None, lambda *a: None, 2, seed)
    return trials, how, sim


def test_successive_halving_finds_a_clearly_better_setting_and_spends_less(tmp_path):
    found, spent = 0, []
    for seed in range(40):
        trials, how, sim = search_once(tmp_path, seed, sd=0.10)
        assert how["sampler"].startswith("grid") and how["combinations"] == 8 and len(trials) == 8
        complete = [t for t in trials if t.state == "complete"]
        best = max(complete, key=lambda t: t.mean)
        found += best.settings == {"ceph.replica_size": 2, "ceph.conf.osd.osd_max_backfills": 3}
        spent.append(sim.reps_spent)
    print(f"best found in {found}/40 searches; repetitions spent {min(spent)}-{max(spent)} of 32 for a full grid")
    assert found >= 38  # 1.5x at 10 % noise: a sound search all but never misses it
    assert max(spent) < 32  # pruning spent less than every setting x every repetition


def test_the_budget_stops_the_search_and_leaves_room_for_the_final_comparison(tmp_path):
    trials, how, sim = search_once(tmp_path, 0, sd=0.10, budget=400)
    assert how["stopped"] == "time budget" and 1 <= len(trials) < 8
    # the confirmation's runs (default, best, best, default) still fit
    assert 400 - sim.reps_spent * 12 >= len(tune_mod.CONFIRMATION) * sim.search.setting_cost()


def test_a_budget_too_small_for_one_setting_is_refused(tmp_path):
    with pytest.raises(SpecError, match="--budget: 2.0 min is too small"):
        tune_mod._prepare(experiment(tmp_path), Objective.parse("radosbench mode=write bandwidth", True), 120, 3, None)
    path = tmp_path / "flat.yaml"
    path.write_text(yaml.safe_dump({"name": "flat", "cluster": {"name": "f", "nodes": 1, "ceph": {"replica_size": 1}},
                                    "workloads": WORKLOADS}))
    with pytest.raises(SpecError, match="nothing to tune"):
        tune_mod._prepare(path, Objective.parse("radosbench mode=write bandwidth", True), 3600, 3, None)


def test_the_dry_run_counts_what_the_searchs_own_stopping_rule_lets_it_measure(tmp_path):
    objective = Objective.parse("radosbench mode=write bandwidth", True)
    lines = tune_mod.plan(experiment(tmp_path), objective, 400, reps=4)
    assert "8 combination(s); grid" in "\n".join(lines) and lines[-1] == "nothing was started (dry run)"
    search = tune_mod._prepare(experiment(tmp_path), objective, 400, 4, None)
    reserve = (1 + len(tune_mod.CONFIRMATION)) * search.setting_cost() + 20
    in_place = int((400 - reserve) // (4 * search.rep_cost)) + 1  # settings started while the rest still fits
    assert f"budget 6.7 min: {in_place} of 8 setting(s) measured whole if they change in place" in lines[-2]
    assert 1 <= in_place < 8 and "more when halving stops some early" in lines[-2]
    with pytest.raises(SpecError, match="--budget"):
        tune_mod.plan(experiment(tmp_path), objective, 60, reps=4)


def test_the_confirmation_says_which_way_a_real_difference_goes():
    """A best setting measured afresh can be significantly worse than the default (picked on fewer
    repetitions): that is no success, and is said so, in the objective's own direction."""
    from dfslab.tune import confirmed
    assert confirmed("different", 1.2, maximize=True) == ("better than the default", True)
    assert confirmed("different", 0.8, maximize=True) == ("worse than the default: keep the default", False)
    assert confirmed("different", 0.8, maximize=False) == ("better than the default", True)  # a latency down
    assert confirmed("same", 1.01, maximize=True) == ("the same as the default", False)
    assert confirmed("can't tell", 1.3, maximize=True) == ("can't tell", False)


def test_the_rungs_said_are_where_optunas_halving_stops_a_setting():
    """The docs said a setting stops after 1, 2, then 4 repetitions; at the default --reps 3 there is
    no fourth. Optuna's pruner, as tune builds it, fed noisy settings (each repetition's running
    mean a fresh draw): the repetitions after which it stopped any are the rungs `tune.rungs` names."""
    import random

    import optuna

    from dfslab.tune import rungs
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    rng = random.Random(4)
    for reps, reduction in ((3, 2), (5, 2), (10, 3)):
        study = optuna.create_study(direction="maximize", pruner=optuna.pruners.SuccessiveHalvingPruner(
            min_resource=1, reduction_factor=reduction))
        stopped_at = set()
        for _ in range(300):
            trial = study.ask()
            for rep in range(1, reps + 1):
                quality = rng.random()
                trial.report(quality, rep)
                if trial.should_prune():
                    stopped_at.add(rep)
                    study.tell(trial, state=optuna.trial.TrialState.PRUNED)
                    break
            else:
                study.tell(trial, float(quality))
        assert stopped_at == set(rungs(reps, reduction)), (reps, reduction, stopped_at)
