"""Small HTML helpers shared by the result objects (private)."""

from __future__ import annotations

__all__ = ["html_table"]


def html_table(title: str, rows: list) -> str:
    """Return a small HTML table for notebooks (values escaped)."""
    import html

    body = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
                   for k, v in rows)
    return f"<table><caption>{html.escape(title)}</caption>{body}</table>"
