"""libcst codemods (``distlint migrate``): plan -> placement -> emit.

* :mod:`.cli` - the ``distlint migrate`` command;
* :mod:`.migrate_continuous` - ``migrate_source`` and the emitter of the new module;
* :mod:`.plan` - what moves (per test, per class), from the PG analysis;
* :mod:`.placement` - where each member goes; :mod:`.families` - the plan's data;
* :mod:`.bases` - what is specific to each per-test base class;
* :mod:`.rewrite`, :mod:`.members` - rewriting functions, reading class bodies;
* :mod:`.main_block_runner` - swapping the main block's runner; :mod:`.report` - the report.
"""
