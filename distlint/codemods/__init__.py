"""libcst codemods (``distlint migrate``)."""
