# SPDX-License-Identifier: MIT
"""unittest results as the 'CHECK <prefix>:<test> PASS|FAIL [last line of the error]' lines that
scripts/run-tests.sh counts (the Python suites: tools, bench-report)."""

import os
import sys
import unittest


def result_class(prefix):
    """A TextTestResult printing one CHECK line per test, named PREFIX:<test without test_>."""

    class CheckResult(unittest.TextTestResult):
        def _check(self, test, verdict, detail=""):
            name = test.id().split(".")[-1].removeprefix("test_").replace("_", "-")
            tail = (" " + detail.strip().splitlines()[-1]) if detail else ""
            print("CHECK %s:%s %s%s" % (prefix, name, verdict, tail), flush=True)

        def addSuccess(self, test):
            super().addSuccess(test)
            self._check(test, "PASS")

        def addFailure(self, test, err):
            super().addFailure(test, err)
            self._check(test, "FAIL", self._exc_info_to_string(err, test))

        def addError(self, test, err):
            super().addError(test, err)
            self._check(test, "FAIL", self._exc_info_to_string(err, test))

    return CheckResult


def run(suite, prefix):
    """Runs SUITE with one CHECK line per test and the failures' tracebacks on stderr; returns
    the exit status (0 when every test passed)."""
    result = unittest.TextTestRunner(resultclass=result_class(prefix), verbosity=0,
                                     stream=open(os.devnull, "w")).run(suite)
    for test, text in result.failures + result.errors:
        print("--- %s\n%s" % (test.id(), text), file=sys.stderr)
    return 0 if result.wasSuccessful() else 1
