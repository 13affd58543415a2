"""T2 (slow tier): tail audits of the private quantile's exact samplers (doc/privacy/quantiles.rst).

Run by hand before a release (doc/privacy/testing.rst)::

    pytest --run-slow -m slow tests/slow/test_t2_quantiles.py

For each selection rule (secure path) and epsilon in {0.1, 0.5, 1, 2}: the
replace-one pair of three values on a small public grid whose best
threshold event has the largest exact privacy loss (found by enumeration
from the exact laws), 1e6 releases per side, tail thresholds, and the
mutants with 0.8x and 0.5x the claimed utility sensitivity (weights
``exp(epsilon u / (2 f))``); the 0.5x mutant MUST be flagged. Results go to
the T2 audit report.
"""

import itertools
import time
import zlib

import numpy as np
import pytest

from sklearn_dpsco._mechanisms import QuantileMechanism, ScaleGrid
from sklearn_dpsco.testing import audit_release_with_mutants

pytestmark = pytest.mark.slow

N_DRAWS = 1_000_000
FACTORS = (0.8, 0.5)
GRID = ScaleGrid(-1, 2, 1)
POSITIONS = (0.3, 0.7, 1.5, 3.0, 5.0)


def _threshold_loss(p, p_other):
    cp, cq = np.cumsum(p)[:-1], np.cumsum(p_other)[:-1]
    return max(np.abs(np.log(cp / cq)).max(), np.abs(np.log((1 - cp) / (1 - cq))).max())


def _worst_pair(mechanism, n=3):
    best = (-1.0, None)
    for data in itertools.combinations_with_replacement(POSITIONS, n):
        for i, v in itertools.product(range(n), POSITIONS):
            other = list(data)
            other[i] = v
            loss = _threshold_loss(mechanism.pmf(list(data)), mechanism.pmf(other))
            if loss > best[0]:
                best = (loss, (list(data), other))
    return best


class _OnNeighbours:
    def __init__(self, mechanism, data, data_p):
        self.mechanism, self.data, self.data_p = mechanism, data, data_p

    def release(self, centre, rng, size):
        data = self.data_p if float(np.ravel(centre)[0]) == 1.0 else self.data
        return self.mechanism.release(data, rng, size=size)[:, None]


@pytest.mark.parametrize("method", ["permute_and_flip", "exponential"])
@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0, 2.0])
def test_t2_quantile(eps, method, audit_report):
    t0 = time.perf_counter()
    loss, (d, dp) = _worst_pair(QuantileMechanism(0.5, eps, GRID, method, "float"))
    rng = np.random.default_rng(zlib.crc32(repr(("quantile", eps, method)).encode()))
    ok, mutants = audit_release_with_mutants(
        lambda f: _OnNeighbours(QuantileMechanism(0.5, eps / f, GRID, method, "secure"), d, dp),
        [0.0], [1.0], eps, 0.0, statistic="epsilon", n_draws=N_DRAWS, rng=rng, factors=FACTORS,
    )
    audit_report.record(
        group="Private quantile (secure, exact selection)", name=f"quantile/{method}",
        params={"eps": eps, "D": d, "D'": dp}, n_draws=N_DRAWS, statistic="epsilon",
        claimed=ok.claimed, lower_bound=ok.lower_bound,
        mutants={lab: (res.lower_bound, None) for lab, res in mutants.items()},
        seconds=time.perf_counter() - t0, note=f"exact threshold-event loss of the pair: {loss:.4g}",
    )
    assert not ok.violation, ok
    assert mutants["x0.5"].violation, mutants["x0.5"]
