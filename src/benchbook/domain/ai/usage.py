"""Token usage: one ``ai_usage`` row per model request, each in a transaction of its own
(kept when the chat that made it fails later), and the all-time totals (AiUsageResponse)."""
from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Integer, func, select
from sqlalchemy.orm import Session

from benchbook.domain.ids import new_id
from benchbook.persistence.tables import AiUsage

Sessions = Callable[[], AbstractContextManager[Session]]
"""Opens a new session (``Database.session``): what the AI code needs of the database."""

TOTALS = ("input_tokens", "output_tokens", "requests", "total_tokens")


@dataclass
class Tokens:
    """Token counts of one request or of a whole chat."""

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    requests: int = 0

    def add(self, other: Tokens) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.total_tokens += other.total_tokens
        self.requests += other.requests

    def response(self) -> dict[str, int]:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "total_tokens": self.total_tokens, "requests": self.requests}


def record(sessions: Sessions, *, provider: str, model: str, tokens: Tokens, error_kind: str | None = None) -> None:
    """Store one model request in its own transaction, committed now."""
    with sessions() as session, session.begin():
        session.add(AiUsage(id=new_id(), provider=provider, model=model[:200],
                            input_tokens=tokens.input_tokens, output_tokens=tokens.output_tokens,
                            total_tokens=tokens.total_tokens, ok=error_kind is None, error_kind=error_kind))


def summary(session: Session) -> dict[str, Any]:
    """AiUsageResponse: all-time ``total`` and ``by_model`` (by provider, then model).
    ``requests`` counts every request made, failed ones too (they used no tokens)."""
    sums = (func.coalesce(func.sum(AiUsage.input_tokens), 0), func.coalesce(func.sum(AiUsage.output_tokens), 0),
            func.count(AiUsage.id), func.coalesce(func.sum(AiUsage.total_tokens), 0))
    typed = [s.cast(Integer) for s in sums]  # PostgreSQL sums are numeric
    total = session.execute(select(*typed)).one()
    rows = session.execute(select(AiUsage.provider, AiUsage.model, *typed)
                           .group_by(AiUsage.provider, AiUsage.model)
                           .order_by(AiUsage.provider, AiUsage.model)).all()
    return {"total": dict(zip(TOTALS, map(int, total), strict=True)),
            "by_model": [{"provider": p, "model": m, **dict(zip(TOTALS, map(int, rest), strict=True))}
                         for p, m, *rest in rows]}
