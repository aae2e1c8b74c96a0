"""History: audit entries and batches, events, history filters, storage conversion, and
the ways back (restore, restore-all, revert)."""
