"""Where the test harnesses that distlint knows live: torch's testing internals and ``distlint.runtime``.

Imports nothing: rules, analyses and the codemod name these modules through here.
"""

#: ``MultiProcessTestCase``, ``MultiProcContinuousTest``, ``TEST_SKIPS``, ``DEFAULT_WORLD_SIZE``.
TORCH_DISTRIBUTED_TESTING = "torch.testing._internal.common_distributed"
#: torch's ``run_tests`` and ``TestCase``.
TORCH_RUNNER_MODULE = "torch.testing._internal.common_utils"
#: distlint's own runtime: ``MultiProcContinuousTest``, ``run_tests``, ``TEST_SKIPS``.
DISTLINT_RUNTIME = "distlint.runtime"
