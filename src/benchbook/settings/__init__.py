"""A project's settings: :mod:`.config` (the project folder, ``benchbook.toml`` and
``.secrets.toml``, where the database and files live, the automation switch) and :mod:`.limits`
(the ``[limits]`` table: every size and count a request, an import or a run may reach; the
limits of the request in progress as a context variable). The lowest layer: every other part
may read them, and they import nothing of benchbook but each other."""
