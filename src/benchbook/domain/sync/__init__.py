"""Sync (issue 34, docs/sync.md): devices that work offline and meet at an authority.

``state`` (this project's sync row), ``devices`` (invites, tokens, revoke: the authority's
side), ``feed`` (the authority's gap-free sequence and the pages devices pull), ``wire`` (an
audit entry as it travels), ``merge`` (a pushed entry applied at the authority through the
domain's rules, field by field), ``replica`` (a pulled page applied on a device), ``conflicts``
(a device's open rows and their resolutions).
"""
