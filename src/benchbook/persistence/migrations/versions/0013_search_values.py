"""search over record values only (SQLite)

``records_fts`` (migration 0002) indexed ``records.data`` as JSON text, keys included: every
record's field ids were words of it, so a search for the start of a field id found every
record, and ``true``/``false`` found every record with a boolean. PostgreSQL's index (0002)
takes only the string and number values. The table now holds the same: the natural name and the
string, number and list values of the top level of ``data`` (a list's items are words of its
JSON text), joined by spaces. It is contentless (``content=''``: the text is not stored twice),
keeps no word positions (``detail=none``: a search asks only which records hold every word, as
a prefix) and no document sizes (``columnsize=0``: nothing ranks by them): at 1,000,000 records
27 MB of index instead of 162 MB. The triggers compute the text from the row, the
same way on insert and on delete, as a contentless table's ``delete`` needs.

Words of a query are split where the tokenizer splits them (``domain.records.search.words``),
so each is one token: without positions, a phrase of two tokens cannot be answered.

Revision ID: 0013_search_values
Revises: 0012_catalog_token
Create Date: 2026-11-26
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

from alembic import op

revision = "0013_search_values"
down_revision = "0012_catalog_token"
branch_labels = None
depends_on = None

TRIGGERS = ("records_fts_insert", "records_fts_delete", "records_fts_update")
TOKENIZE = "tokenize='unicode61 remove_diacritics 2'"


def values_text(row: str) -> str:
    """SQL for the searchable text of ``row``'s (``new``, ``old`` or ``records``) values."""
    return (f"(SELECT group_concat(value, ' ') FROM json_each({row}.data) "
            "WHERE type IN ('text', 'integer', 'real', 'array'))")


def _dropped() -> bool:
    """Drop the search table and its triggers on SQLite; False elsewhere (nothing to do)."""
    if op.get_bind().dialect.name != "sqlite":
        return False
    for trigger in TRIGGERS:
        op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    op.execute("DROP TABLE IF EXISTS records_fts")
    return True


def upgrade() -> None:
    if not _dropped():
        return
    op.execute(f"CREATE VIRTUAL TABLE records_fts USING fts5(natural_name, vals, content='', detail=none, columnsize=0, "
               f"{TOKENIZE})")
    insert_new = (f"INSERT INTO records_fts(rowid, natural_name, vals) "
                  f"VALUES (new.rowid, new.natural_name, {values_text('new')});")
    delete_old = (f"INSERT INTO records_fts(records_fts, rowid, natural_name, vals) "
                  f"VALUES ('delete', old.rowid, old.natural_name, {values_text('old')});")
    op.execute(f"CREATE TRIGGER records_fts_insert AFTER INSERT ON records BEGIN {insert_new} END")
    op.execute(f"CREATE TRIGGER records_fts_delete AFTER DELETE ON records BEGIN {delete_old} END")
    op.execute(f"CREATE TRIGGER records_fts_update AFTER UPDATE OF natural_name, data ON records BEGIN "
               f"{delete_old} {insert_new} END")
    op.execute(f"INSERT INTO records_fts(rowid, natural_name, vals) "
               f"SELECT rowid, natural_name, {values_text('records')} FROM records")


def downgrade() -> None:
    """Back to the index of migration 0002 (its own upgrade makes it again and fills it)."""
    if not _dropped():
        return
    spec = importlib.util.spec_from_file_location("search_0002", Path(__file__).with_name("0002_search.py"))
    assert spec is not None and spec.loader is not None
    search_0002 = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(search_0002)
    search_0002.upgrade()
