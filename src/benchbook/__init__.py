"""benchbook: a local-first research data service.

Layers (nothing imports upwards): ``handlers`` (HTTP, thin) → ``domain`` (the rules)
→ ``persistence`` (SQLAlchemy tables, engine, Alembic migrations).
"""
from __future__ import annotations

__version__ = "2.0.0rc4.post3"
