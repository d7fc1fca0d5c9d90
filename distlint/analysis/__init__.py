"""Facts about test modules shared by the lint rules and the codemods (never imports torch)."""
