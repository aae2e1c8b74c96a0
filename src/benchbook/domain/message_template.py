"""Message templates: a message with what varies from one occurrence to the next (quoted
values, ids, paths, numbers) replaced by placeholders, so that messages saying the same thing
about different records compare equal. Failed runs are grouped on it
(:mod:`benchbook.runner.failure_groups`, which has the database compute it from
:data:`RULES`) and import problems without a kind are summarised on it
(:mod:`benchbook.domain.imports.problems`). ``docs/automation.md`` (*Failure groups*) describes
the rules for users.
"""
from __future__ import annotations

import functools
import re

_WORD_BEFORE = r"(?<!\w)"
_WORD_AFTER = r"(?!\w)"
_ULID = "[0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{26}"
_HEX = "[0-9a-fA-F]"
_UUID = f"{_HEX}{{8}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}}"
_PATH_CHAR = r"[^\s'\"`,;:()<>\[\]{}]"

RULES: list[tuple[str, str, str]] = [
    # quoted values: '…', "…" and `…` (an apostrophe inside a word, as in "can't", opens nothing)
    (rf"(?=['\"`]){_WORD_BEFORE}(?:'[^'\n]*'|\"[^\"\n]*\"|`[^`\n]*`)", "<value>", "'\"`"),
    # ids: a 26-character ULID (every id of benchbook) or a UUID, standing alone
    (f"{_WORD_BEFORE}(?:{_UUID}|{_ULID}){_WORD_AFTER}", "<id>", ""),
    # paths: /abs, ~/…, ./…, ../…, C:\…, and relative a/b/c.ext (a last part with an extension)
    ((rf"(?<![\w/.~])(?:~|\.\.?)?/{_PATH_CHAR}+|{_WORD_BEFORE}[A-Za-z]:\\{_PATH_CHAR}+"
      rf"|{_WORD_BEFORE}[\w.-]+(?:/[\w.-]+)*/[\w-]+\.\w+{_WORD_AFTER}"), "<path>", "/\\"),
    # numbers: every run of digits, with its decimal parts and exponent (1, 0.40, 1.2.3, 3e-5)
    (r"\d+(?:\.\d+)*(?:[eE][+-]?\d+)?", "<n>", "0123456789"),
]
"""``(pattern, placeholder, needs)`` triples, applied in this order; a pattern matches only a
message holding one of the characters ``needs`` (when given), which spares :func:`template` most
searches. The patterns use only what Python's ``re`` and PostgreSQL's regular expressions read
alike (``\\w``, ``\\d``, ``\\s``, lookahead and lookbehind; no ``\\b``)."""
_COMPILED = [(re.compile(pattern), placeholder, frozenset(needs)) for pattern, placeholder, needs in RULES]


@functools.lru_cache(maxsize=8192)
def template(message: str | None) -> str | None:
    """The template of a ``message`` (a run's error, an import problem): each of :data:`RULES` replaces what it matches
    by its placeholder (``"record 01J… has 'x' in /tmp/a.csv row 12"`` → ``"record <id> has
    <value> in <path> row <n>"``). None stays None."""
    if message is None:
        return None
    for pattern, placeholder, needs in _COMPILED:
        if not needs or not needs.isdisjoint(message):
            message = pattern.sub(placeholder, message)
    return message
