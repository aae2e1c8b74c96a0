"""Handlers of the ``automation`` tag (docs/automation.md *The switch*): pause and resume automation."""
from __future__ import annotations

from typing import Any

from benchbook.handlers.uow import kick_worker, read, services, write
from benchbook.runner import switch

Body = dict[str, Any]


def get_automation() -> tuple[Body, int]:
    with read() as s:
        return switch.status(s, services().project.root), 200


def stop_automation() -> tuple[Body, int]:
    with write() as ctx:
        return switch.stop(ctx.session, services().project.root), 200


def resume_automation() -> tuple[Body, int]:
    with write() as ctx:
        out = switch.resume(ctx.session, services().project.root)
    kick_worker()
    return out, 200
