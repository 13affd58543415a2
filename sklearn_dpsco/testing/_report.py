"""The slow tier's (T2) audit report: each audit's certified bound and its measured power.

An audit alone cannot say "this mechanism is private"; it says "no violation
larger than what this audit can see". What it can see is *measured* on the
same run: every audit is repeated on mutants of known, larger privacy loss
(half the noise; 0.8x the noise), and the report records the lower bound each
mutant gets. A passed audit with a flagged half-noise mutant reads: "no
violation of the size of a factor-2 noise error; the 0.8x mutant certified
X" (doc/privacy/testing.rst).

Used by ``tests/conftest.py`` (fixture ``audit_report``, option
``--audit-report``); other T2 audits (phased algorithms, user-level
propose-test-release) record into the same report.
"""

import datetime
import math
import platform
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from ._audit import audit_epsilon, audit_gaussian_dp, project_on

__all__ = ["AuditRecord", "AuditReport", "release_scores", "audit_release_with_mutants"]


@dataclass
class AuditRecord:
    """One audit and its mutants, as written to the report."""

    group: str
    name: str
    params: dict
    n_draws: int
    statistic: str
    claimed: float
    lower_bound: float
    mutants: dict = field(default_factory=dict)  # label -> (certified lower bound, true value or None)
    expected_violation: bool = False
    seconds: float = 0.0
    note: str = ""

    @property
    def passed(self):
        violated = self.lower_bound > self.claimed
        return violated if self.expected_violation else not violated


def _fmt(x):
    if x is None:
        return "-"
    if isinstance(x, float) and (math.isinf(x) or math.isnan(x)):
        return str(x)
    return f"{x:.4g}"


class AuditReport:
    """Collects :class:`AuditRecord` objects and renders them as Markdown."""

    def __init__(self):
        self.records = []

    def record(self, **kwargs):
        rec = AuditRecord(**kwargs)
        self.records.append(rec)
        return rec

    def __len__(self):
        return len(self.records)

    def to_markdown(self, title="T2 audit report", meta=None):
        lines = [f"# {title}", ""]
        meta = dict(meta or {})
        meta.setdefault("generated", datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
        meta.setdefault("python", platform.python_version())
        meta.setdefault("numpy", np.__version__)
        for k, v in meta.items():
            lines.append(f"- {k}: {v}")
        n_fail = sum(not r.passed for r in self.records)
        lines += [
            f"- audits: {len(self.records)}, failed: {n_fail}",
            "",
            "Reading: `lb` is the certified lower bound (Clopper-Pearson, alpha = 1e-6) on the",
            "audited statistic (epsilon, or Gaussian-DP mu against mu_max(eps, delta)); a",
            "correct mechanism has lb <= claimed. The mutant columns are the measured power:",
            "the bound the same audit certifies for the mechanism with 0.8x and 0.5x the",
            "noise (true value in brackets). A pass means no violation larger than the",
            "flagged mutant's; rows marked *expected* document a known weakness",
            "(the float path's porosity) and pass when the violation IS found.",
            "",
        ]
        groups = {}
        for r in self.records:
            groups.setdefault(r.group, []).append(r)
        for group, recs in groups.items():
            mutant_labels = []
            for r in recs:
                for lab in r.mutants:
                    if lab not in mutant_labels:
                        mutant_labels.append(lab)
            param_keys = []
            for r in recs:
                for k in r.params:
                    if k not in param_keys:
                        param_keys.append(k)
            lines.append(f"## {group}")
            lines.append("")
            head = ["audit"] + param_keys + ["n/side", "stat", "claimed", "lb"] + [f"mutant {m}" for m in mutant_labels]
            head += ["result", "s"]
            lines.append("| " + " | ".join(head) + " |")
            lines.append("|" + "---|" * len(head))
            for r in recs:
                row = [r.name] + [str(r.params.get(k, "")) for k in param_keys]
                row += [f"{r.n_draws:.2g}", r.statistic, _fmt(r.claimed), _fmt(r.lower_bound)]
                for lab in mutant_labels:
                    if lab in r.mutants:
                        lb, true = r.mutants[lab]
                        flag = " **flagged**" if lb > r.claimed else ""
                        row.append(f"{_fmt(lb)} [{_fmt(true)}]{flag}")
                    else:
                        row.append("")
                verdict = "pass" if r.passed else "**FAIL**"
                if r.expected_violation:
                    verdict += " (expected)"
                row += [verdict, f"{r.seconds:.1f}"]
                lines.append("| " + " | ".join(row) + " |")
            lines.append("")
        return "\n".join(lines) + "\n"

    def write(self, path, **kwargs):
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(self.to_markdown(**kwargs))


def release_scores(release, centre, centre_p, n_draws, rng, chunk=250_000, n_jobs=2):
    """Scalar scores of ``n_draws`` releases on each centre, projected on the shift direction.

    ``release(value, rng, size)`` is a mechanism's vectorised release. The two
    sides draw from two children of ``rng`` (``rng.spawn(2)``, reproducible
    for a seeded ``rng``) in two threads -- the samplers release the GIL --
    in chunks to bound memory.
    """
    def side(value, r):
        parts = []
        left = n_draws
        while left > 0:
            m = min(chunk, left)
            parts.append(project_on(release(value, r, size=m), centre, centre_p))
            left -= m
        return np.concatenate(parts)

    rngs = rng.spawn(2)
    if n_jobs <= 1:
        return side(centre, rngs[0]), side(centre_p, rngs[1])
    with ThreadPoolExecutor(max_workers=2) as pool:
        a, b = pool.map(side, (centre, centre_p), rngs)
    return a, b


def audit_release_with_mutants(make, centre, centre_p, epsilon, delta, *, statistic, n_draws, rng,
                               factors=(0.8, 0.5), tails=50, alpha=1e-6, selection_alpha=1e-3):
    """Audit ``make(1.0)`` and its noise mutants ``make(f)`` on the same neighbours.

    Parameters
    ----------
    make : callable
        ``make(f)`` returns the mechanism whose noise is ``f`` times the
        correct noise (``f = 1``: the mechanism under test), typically by
        claiming ``f`` times the true sensitivity.
    centre, centre_p : array-like
        Worst-case neighbouring centres (the release direction is projected on).
    epsilon, delta : float
        The claimed guarantee.
    statistic : {"epsilon", "mu"} or tuple of them
        Pure/approximate-DP event audit with ``tails`` tail thresholds, or
        Gaussian-DP audit against ``mu_max(epsilon, delta)``. A tuple runs
        each on the same draws.
    n_draws : int
        Releases per side, per mechanism.
    rng : numpy.random.Generator
    factors : tuple of float, default=(0.8, 0.5)
        Noise factors of the mutants.
    tails : int, default=50
        Tail thresholds per side (see :func:`audit_epsilon`).
    alpha : float, default=1e-6
        Certification level of each audit.
    selection_alpha : float, default=1e-3
        Level of the Clopper-Pearson bounds used to *choose* the event on
        the calibration half. Stricter than the T1 default (0.05): with
        hundreds of tail candidates, a lenient level lets a lucky rare event
        win the selection and then certify nothing on the holdout.

    Returns
    -------
    ok : AuditResult
    mutants : dict
        ``{"x0.8": AuditResult, "x0.5": AuditResult}``.
        With a tuple ``statistic``: a dict ``{statistic: (ok, mutants)}``.
    """
    stats_ = (statistic,) if isinstance(statistic, str) else tuple(statistic)
    audits = {"mu": audit_gaussian_dp, "epsilon": audit_epsilon}
    results = {st: {} for st in stats_}
    for f in (1.0,) + tuple(factors):
        a, b = release_scores(make(f).release, centre, centre_p, n_draws, rng)
        for st in stats_:
            results[st][f] = audits[st](
                a, b, epsilon, delta, alpha=alpha, tails=tails, selection_alpha=selection_alpha
            )
    out = {st: (res[1.0], {f"x{f:g}": res[f] for f in factors}) for st, res in results.items()}
    return out[statistic] if isinstance(statistic, str) else out
