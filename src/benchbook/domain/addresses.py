"""Host names as benchbook compares them, and which of them name this computer.

Used where the service decides what it may reach or serve: ``benchbook serve --host`` (docs/decisions.md
*Local only*: anything but this computer's own needs ``--allow-remote``) and the
addresses ``GET /ai/local/models`` may ask (issue 33 item 10).
"""
from __future__ import annotations

import ipaddress


def host_key(name: str) -> str:
    """``name`` as compared: lower-cased, without surrounding blanks, brackets or a trailing
    dot (``"[::1]"`` → ``"::1"``, ``"LocalHost."`` → ``"localhost"``)."""
    return name.strip().lower().removeprefix("[").removesuffix("]").rstrip(".")


def is_loopback(host: str) -> bool:
    """Whether ``host`` (as in a URL: brackets allowed) names only this computer: ``localhost``
    (any case, optional trailing dot), an IPv4 loopback address (``127.0.0.0/8``), ``::1`` or an
    IPv4-mapped loopback (``::ffff:127.0.0.1``). Everything else — ``0.0.0.0``, ``::``, LAN
    addresses, other host names, other spellings of loopback (``127.1``), the empty string — is
    False. Never raises."""
    name = host_key(host)
    if name == "localhost":
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback
