"""Analyses of the stdlib ``ast`` tree: what the libcst-based analyses answer, without libcst.

A cold ``distlint check`` of a large test file spends most of its time importing libcst
(~0.4 s) and parsing with it; the stdlib parse is a fraction of that. The analyses move here
one at a time, each giving the answers of its libcst counterpart (and tested against it).
Nothing in this package imports libcst, directly or through another package's ``__init__``:

* :mod:`.ast_names` - qualified names of names, attributes and calls
  (:mod:`distlint.analysis.names`' answers), from one walk (:mod:`.ast_scope_walk`) and
  libcst's scope rules (:mod:`.ast_scopes`).
"""
