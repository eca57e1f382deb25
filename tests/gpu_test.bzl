# SPDX-License-Identifier: Apache-2.0
"""gpu_test: one scenario GPU test of tests/, NAME.cc against the Manager.

Every such test is tagged `gpu` (./run_tests builds it, and
tools/gpu_suite.sh stages it to run on a GPU machine), links GoogleTest's
main and the GPU test helpers, and names only the deps it adds.
"""

_COMMON_DEPS = [
    "//graph:manager",
    "//tests:gpu_test_util",
    "//third_party:gtest_main",
]

def gpu_test(name, deps = [], **kwargs):
    """A cc_test `name` built from `name`.cc, tagged gpu.

    Args:
      name: the test, and its source file without `.cc`.
      deps: what the test needs beyond the Manager, gpu_test_util and gtest_main.
      **kwargs: passed to cc_test.
    """
    native.cc_test(
        name = name,
        srcs = [name + ".cc"],
        tags = ["gpu"],
        deps = _COMMON_DEPS + [d for d in deps if d not in _COMMON_DEPS],
        **kwargs
    )
