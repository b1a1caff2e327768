"""The documentation site builds strictly (a broken link or anchor fails it), its reference pages
hold every field of the models that validate files, and the README's links land on real pages."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    res = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(out)], cwd=REPO,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return out


def test_the_reference_pages_hold_every_field_of_the_models(site):
    from dfslab.experiment import ExperimentFile
    from dfslab.spec import ClusterSpec
    from dfslab.workloads import WORKLOADS, workload
    spec = (site / "spec" / "index.html").read_text()
    experiments = (site / "experiments" / "index.html").read_text()
    assert all(f"<code>{name}</code>" in spec for name in ClusterSpec.model_fields)
    assert all(f"<code>{name}</code>" in experiments for name in ExperimentFile.model_fields)
    for kind in WORKLOADS:
        assert f"type: {kind}" in experiments
        assert all(f"<code>{name}</code>" in experiments for name in workload(kind).Params.model_fields), kind


def test_the_readmes_links_land_on_pages_and_anchors_of_the_site(site):
    readme = (Path(REPO) / "README.md").read_text()
    links = re.findall(r"\]\(((?:docs/)[^)#\s]*)(#[^)\s]*)?\)", readme)
    assert links
    for path, anchor in links:
        assert (Path(REPO) / path).exists(), path
        if path.endswith(".md") and anchor:
            page = site / Path(path).relative_to("docs").with_suffix("") / "index.html"
            assert f'id="{anchor[1:]}"' in page.read_text(), (path, anchor)
