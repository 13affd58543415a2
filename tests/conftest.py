"""Test tiers (doc/privacy/testing.rst): T0 exact and T1 statistical run by default
(CI); T2 ``slow`` audits run only with ``--run-slow`` (doc/privacy/testing.rst).

T2 audits record into the session's ``audit_report`` fixture; at the end of
the session the report (each audit's certified bound and its mutants', the
measured power) is written as Markdown to ``--audit-report`` (default
``t2_audit_report.md`` in the current directory).
"""

import time

import pytest


def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true", default=False, help="run the T2 slow audit tier")
    parser.addoption("--run-benchmark", action="store_true", default=False, help="run benchmark-marked tests")
    parser.addoption(
        "--audit-report",
        default="t2_audit_report.md",
        help="where the T2 tier writes its Markdown audit report (only when audits were recorded)",
    )


def pytest_collection_modifyitems(config, items):
    run_slow = config.getoption("--run-slow")
    run_bench = config.getoption("--run-benchmark")
    skip_slow = pytest.mark.skip(reason="T2 slow audit: run with --run-slow")
    skip_bench = pytest.mark.skip(reason="benchmark: run with --run-benchmark")
    for item in items:
        if "slow" in item.keywords and not run_slow:
            item.add_marker(skip_slow)
        if "benchmark" in item.keywords and not run_bench:
            item.add_marker(skip_bench)


# ---------------------------------------------------------------- T2 audit report
_REPORT_KEY = pytest.StashKey()


def pytest_configure(config):
    from sklearn_dpsco.testing import AuditReport

    config.stash[_REPORT_KEY] = (AuditReport(), time.time())


@pytest.fixture(scope="session")
def audit_report(pytestconfig):
    """The session's :class:`sklearn_dpsco.testing.AuditReport` (T2 audits record here)."""
    return pytestconfig.stash[_REPORT_KEY][0]


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    report, start = config.stash.get(_REPORT_KEY, (None, None))
    if not report:
        return
    import sklearn_dpsco

    path = config.getoption("--audit-report")
    report.write(
        path,
        meta={
            "sklearn_dpsco": f"{sklearn_dpsco.__version__} ({sklearn_dpsco.__file__})",
            "wall time": f"{time.time() - start:.0f} s",
        },
    )
    failed = sum(not r.passed for r in report.records)
    terminalreporter.write_sep("=", f"T2 audit report: {len(report)} audits, {failed} failed -> {path}")
