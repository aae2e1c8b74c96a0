"""The authority's devices (docs/sync.md *Setting up*): a one-use, expiring
invite per device, exchanged once for a device token; both stored only as sha256 digests.

A device presents its token as ``Authorization: Bearer <token>`` on every sync call; :func:`verify`
answers the device's name, the only thing the authority ever stamps on a synced change (docs/sync.md
*Setting up*: never a name from a request body). Revoking takes effect on the device's next call
(401).
"""
from __future__ import annotations

import hashlib
import re
import secrets
from datetime import timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from benchbook.domain.errors import Conflict, Invalid, NotFound, Unauthorized, error_entry
from benchbook.persistence.tables import SyncDevice, utcnow

INVITE_TTL = timedelta(hours=24)
"""How long an invite may be used (once)."""
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
TOKEN_PREFIX = "bbd_"
INVITE_PREFIX = "bbi_"


def digest(secret: str) -> str:
    """sha256 hex of a token or invite: what the authority keeps of it."""
    return hashlib.sha256(secret.encode()).hexdigest()


def _shown(device: SyncDevice) -> dict[str, Any]:
    """DeviceResponse: name, state (``invited``, ``joined``, ``revoked``, ``expired``), times."""
    now = utcnow()
    if device.revoked_at is not None:
        state = "revoked"
    elif device.token_sha256 is not None:
        state = "joined"
    elif device.invite_expires_at is not None and device.invite_expires_at < now:
        state = "expired"
    else:
        state = "invited"
    at = {k: (v.isoformat() if v else None) for k, v in (
        ("created_at", device.created_at), ("joined_at", device.joined_at), ("last_seen_at", device.last_seen_at),
        ("revoked_at", device.revoked_at), ("invite_expires_at", device.invite_expires_at))}
    return {"name": device.name, "state": state, **at}


def list_devices(session: Session) -> list[dict[str, Any]]:
    """Every device, by name (DeviceResponse each)."""
    return [_shown(d) for d in session.scalars(select(SyncDevice).order_by(SyncDevice.name))]


def invite(session: Session, name: str) -> dict[str, Any]:
    """A new device ``name`` and its one-use invite: ``{name, invite, expires_at}``; the invite
    is shown only here. Raises ``Invalid`` (name not ``[A-Za-z0-9._-]``, at most 100) and
    ``Conflict`` (a device of that name exists, joined or invited; a revoked name stays taken,
    so history's stamps stay unambiguous)."""
    if not NAME.match(name or ""):
        raise Invalid("a device name is 1 to 100 letters, digits, '.', '_' or '-', starting with a letter or digit",
                      [error_entry(["body", "name"], "not a device name", "device_name", name)])
    if session.get(SyncDevice, name) is not None:
        raise Conflict(f"a device named {name!r} exists already (names stay taken after a revoke)")
    code = INVITE_PREFIX + secrets.token_urlsafe(24)
    now = utcnow()
    device = SyncDevice(name=name, invite_sha256=digest(code), invite_expires_at=now + INVITE_TTL, created_at=now)
    session.add(device)
    session.flush()
    return {"name": name, "invite": code, "expires_at": (now + INVITE_TTL).isoformat()}


def join(session: Session, code: str) -> tuple[str, str]:
    """Exchange an invite for a token: ``(device name, token)``; the invite is used up. Raises
    ``Unauthorized`` for an unknown, used, expired or revoked invite (one message for all: the
    answer tells a guesser nothing)."""
    device = session.scalar(select(SyncDevice).where(SyncDevice.invite_sha256 == digest(code or "")).with_for_update())
    now = utcnow()
    if device is None or device.revoked_at is not None or device.invite_expires_at is None \
            or device.invite_expires_at < now:
        raise Unauthorized("this invite is unknown, used, expired or revoked: ask the authority's admin for a new one")
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    device.invite_sha256, device.invite_expires_at = None, None
    device.token_sha256, device.joined_at, device.last_seen_at = digest(token), now, now
    return device.name, token


def verify(session: Session, authorization: str | None) -> str:
    """The device name of an ``Authorization: Bearer <token>`` header. Raises ``Unauthorized``
    when it is missing, not a bearer token, unknown or revoked."""
    scheme, _, token = (authorization or "").strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("this call needs a device token: Authorization: Bearer <token>")
    device = session.scalar(select(SyncDevice).where(SyncDevice.token_sha256 == digest(token.strip())))
    if device is None or device.revoked_at is not None:
        raise Unauthorized("this device token is unknown or revoked: ask the authority's admin for a new invite")
    return device.name


def seen(session: Session, name: str) -> None:
    """Note that device ``name`` called now (in the caller's write transaction)."""
    device = session.get(SyncDevice, name)
    if device is not None:
        device.last_seen_at = utcnow()


def revoke(session: Session, name: str) -> dict[str, Any]:
    """Revoke device ``name``: its token and any unused invite stop working at once. Raises
    ``NotFound``. Revoking twice is harmless."""
    device = session.get(SyncDevice, name)
    if device is None:
        raise NotFound(f"device {name!r} not found")
    if device.revoked_at is None:
        device.revoked_at = utcnow()
        device.invite_sha256 = None
    return _shown(device)
