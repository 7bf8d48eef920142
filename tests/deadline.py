# SPDX-License-Identifier: GPL-2.0
"""A run of the tests that cannot outlast its time: with TEST_DEADLINE (a
time, in seconds since the epoch) in the environment, no test starts after
it and none runs past it. .ci/run sets it some minutes before CI's own
limit, so that a slow day ends in a report naming the tests that did not
finish, not in a run killed without one. Each test keeps its own bound
(pytest.ini, or its timeout mark) where that is the shorter."""
import math
import os
import time

import pytest


def seconds_left():
    deadline = os.environ.get("TEST_DEADLINE")
    return None if not deadline else float(deadline) - time.time()


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item):
    """Before pytest-timeout's own wrapper reads the test's bound."""
    left = seconds_left()
    if left is not None and left > 0:
        marker = item.get_closest_marker("timeout")
        own = marker.args[0] if marker and marker.args else float(item.config.getini("timeout") or 0)
        if not own or left < own:
            item.add_marker(pytest.mark.timeout(math.ceil(left)), append=False)
    yield


def pytest_runtest_setup(item):
    left = seconds_left()
    if left is not None and left <= 0:
        pytest.fail(f"not started: TEST_DEADLINE passed {-left:.0f} s ago", pytrace=False)
