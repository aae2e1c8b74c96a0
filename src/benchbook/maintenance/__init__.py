"""Local maintenance of a project folder (issue #13; ``docs/maintenance.md``): ``backup.py``
(a consistent archive of the database, the files and the settings, and its restore into a new
folder) and ``doctor.py`` (checks with how to fix what they find, and the safe fixes).

They work on the folder and its database in-process, like ``init`` and ``import``, and are
commands (``benchbook backup|restore|doctor``, :mod:`benchbook.cli.maintenance`), not HTTP
operations. The package sits beside the runner: it may use the domain, persistence and the
runner (the run queue's own recovery), and nothing that serves requests imports it.
"""
from __future__ import annotations


class MaintenanceError(Exception):
    """A maintenance command cannot do what was asked; ``str(error)`` says why and what to do."""
