"""T0/T1: the T2 runner's pieces (report rendering, audits with mutants, tail thresholds)."""

import numpy as np
import pytest

from sklearn_dpsco._mechanisms import LaplaceMechanism
from sklearn_dpsco.testing import AuditReport, audit_epsilon, audit_release_with_mutants, release_scores


def test_report_renders_records_and_verdicts(tmp_path):
    rep = AuditReport()
    rep.record(group="G", name="a/secure", params={"eps": 1.0, "d": 2}, n_draws=10**6, statistic="epsilon",
               claimed=1.0, lower_bound=0.97, mutants={"x0.5": (1.97, 2.0), "x0.8": (1.2, 1.25)})
    rep.record(group="G", name="b/float", params={"eps": 1.0}, n_draws=10**6, statistic="epsilon",
               claimed=1.0, lower_bound=9.7, expected_violation=True)
    rep.record(group="H", name="c", params={}, n_draws=10, statistic="mu", claimed=0.5, lower_bound=0.6)
    assert [r.passed for r in rep.records] == [True, True, False]
    md = rep.to_markdown(meta={"run": "unit"})
    assert "## G" in md and "## H" in md and "audits: 3, failed: 1" in md
    assert "1.97 [2] **flagged**" in md and "pass (expected)" in md and "**FAIL**" in md
    path = tmp_path / "r.md"
    rep.write(path)
    assert path.read_text().startswith("# T2 audit report")


def test_release_scores_are_reproducible_and_thread_independent():
    m = LaplaceMechanism(1.0, 1.0, 2)
    c, cp = np.zeros(2), np.array([1.0, 0.0])
    a1, b1 = release_scores(m.release, c, cp, 3000, np.random.default_rng(1), chunk=1000)
    a2, b2 = release_scores(m.release, c, cp, 3000, np.random.default_rng(1), chunk=1000, n_jobs=1)
    np.testing.assert_array_equal(a1, a2)
    np.testing.assert_array_equal(b1, b2)
    assert a1.shape == b1.shape == (3000,)


@pytest.mark.statistical
def test_audit_with_mutants_and_tails():
    c, cp = np.zeros(1), np.ones(1)
    ok, mutants = audit_release_with_mutants(
        lambda f: LaplaceMechanism(f, 1.0, 1), c, cp, 1.0, 0.0, statistic="epsilon", n_draws=100_000,
        rng=np.random.default_rng(3),
    )
    assert not ok.violation and mutants["x0.5"].violation
    both = audit_release_with_mutants(
        lambda f: LaplaceMechanism(f, 1.0, 1), c, cp, 1.0, 1e-6, statistic=("epsilon", "mu"), n_draws=20_000,
        rng=np.random.default_rng(4), factors=(0.5,),
    )
    assert set(both) == {"epsilon", "mu"} and set(both["mu"][1]) == {"x0.5"}
    # tail thresholds only add candidates
    rng = np.random.default_rng(5)
    a, b = rng.laplace(0, 1, 50_000), rng.laplace(1, 1, 50_000)
    assert not audit_epsilon(a, b, 1.0, tails=30).violation
