"""The runner's exceptions, in one place (issue 39 item 4: one root per package).

::

    RunnerError
     ├── StepFailed     a step's plugin operation failed: ``kind``, ``message``, ``retryable``
     │                  (the plugin protocol's error envelope; kinds in ``runner/plugin_host/frames.py``)
     ├── Regroup        a run of an open group of runs failed: the drain rolls the group back and
     │                  runs that run alone (``runner/drain.py``)
     └── StopRun        the run ends before its next step: cancelled, deleted or interrupted
                        (``runner/execution.py``)

None of them reaches a client: the engine turns each into the run's status and error.
"""
from __future__ import annotations

from typing import Any


class RunnerError(Exception):
    """Root of the runner's exceptions."""


class StepFailed(RunnerError):
    """A plugin operation failed: ``kind`` (see ``runner/plugin_host/frames.py``), ``message``,
    ``retryable``."""

    def __init__(self, kind: str, message: str, retryable: bool = False) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message
        self.retryable = retryable

    def envelope(self) -> dict[str, Any]:
        """The plugin protocol's error envelope ``{kind, message, retryable}``."""
        return {"kind": self.kind, "message": self.message, "retryable": self.retryable}


class Regroup(RunnerError):
    """A run of an open group failed: the group is rolled back and run ``job_id`` runs alone."""

    def __init__(self, job_id: str) -> None:
        super().__init__(job_id)
        self.job_id = job_id


class StopRun(RunnerError):
    """The run ends before its next step: ``status`` ``cancelled``, ``deleted`` or ``interrupted``."""

    def __init__(self, status: str) -> None:
        super().__init__(status)
        self.status = status
