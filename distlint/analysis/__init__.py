"""Facts about test modules shared by the lint rules and the codemods (never imports torch).

* :mod:`.model` - the PG analysis' contract with rules and codemods (``Reason``: the one
  reason table);
* :mod:`.names` - what names mean (``NameResolver``; the main-block rules' ``ImportTable``);
* :mod:`.mainblock` - the ``if __name__ == "__main__":`` block (DL1xx), its pre-screen, fixes;
* :mod:`.pg` - execution models, PG creations, the scan of tests and helpers, eligibility (DL2xx);
* :mod:`.walk` - the one node-field walker the analyses share.
"""
