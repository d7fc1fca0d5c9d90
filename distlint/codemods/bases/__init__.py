"""What ``distlint migrate`` knows about each per-test base class: one module per base.

A base module says what is specific to that base: which base class it replaces, the
members its continuous counterpart reserves or reads by itself, and the class-level
statements the new class needs to build the same PG (world size, timeout, backend).
The plan (:mod:`distlint.codemods.plan`), the placement (:mod:`distlint.codemods.placement`)
and the emitter (:mod:`distlint.codemods.migrate_continuous`) read them from here, so a
new base (``DTensorTestBase``, ``FSDPTest``, ``DistributedTestBase``) gets its own module
beside :mod:`.multi_process_test_case` instead of conditions spread over those three.
"""
