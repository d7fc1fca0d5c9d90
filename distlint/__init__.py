"""distlint: lint, migrate and run PyTorch-style distributed test suites.

Importing ``distlint`` (or anything but ``distlint.runtime``) never imports torch.
"""

__version__ = "0.1.0"
