"""Where monitoring keeps its history: a real database (SQLite by default, PostgreSQL by URL)."""

from bnfisher.store.database import SCHEMA_VERSION, Store

__all__ = ["SCHEMA_VERSION", "Store"]
