"""Where monitoring keeps its history: a real database (SQLite by default, PostgreSQL by URL)."""

from bnfisher.store.database import SCHEMA_VERSION, Store
from bnfisher.store.location import StoreLocation, redact, resolve_store

__all__ = ["SCHEMA_VERSION", "Store", "StoreLocation", "redact", "resolve_store"]
