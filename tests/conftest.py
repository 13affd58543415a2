"""Test tiers (PRIVACY_TESTING.md): T0 exact and T1 statistical run by default
(CI); T2 ``slow`` audits run only with ``--run-slow`` (doc/privacy/testing.rst)."""

import pytest


def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true", default=False, help="run the T2 slow audit tier")
    parser.addoption("--run-benchmark", action="store_true", default=False, help="run benchmark-marked tests")


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
