"""How the CLI spells an API parameter in text written for the API (help, error details):
`` `force=true` `` → `` `--force` ``. Used by :mod:`.generated` (help) and :mod:`.output`
(error details)."""
from __future__ import annotations

import re

_BACKTICKED = re.compile(r"`([a-z][a-z0-9_]*)(?:=([^`\s]*))?`")


def cli_spelling(text: str, names: dict[str, str]) -> str:
    """``text`` (an operation's help) with its backticked parameter references spelled as the
    CLI takes them: ``names`` maps an HTTP parameter name to its option (``--force``) or
    argument (``RECORD_ID``). `` `force=true` `` → `` `--force` ``, `` `force=false` `` →
    `` `--no-force` ``, `` `limit=0` `` → `` `--limit 0` ``, `` `schema` `` → `` `--schema` ``;
    other backticked words are left alone (issue 14, item 9)."""
    def spell(match: re.Match[str]) -> str:
        name, value = match.group(1), match.group(2)
        cli = names.get(name)
        if cli is None or (value is None and _in_list(text, match.start(), match.end())):
            return match.group(0)
        if value is None or not cli.startswith("--"):
            return f"`{cli}`" if value is None else f"`{cli}={value}`"
        if value in ("true", "false"):
            return f"`{cli}`" if value == "true" else f"`--no-{cli[2:]}`"
        return f"`{cli} {value}`"
    return _BACKTICKED.sub(spell, text)


def _in_list(text: str, start: int, end: int) -> bool:
    """Whether the backticked word at ``text[start:end]`` is one of a list of values
    (`` `a`, `b` or `c` ``): such words are values, not parameter names."""
    before, after = text[max(0, start - 5):start], text[end:end + 5]
    return before.endswith(("`, ", "` or ", "`,\n", "` or\n", "(")) or after.startswith((", `", " or `", ",\n`"))
