"""bnfisher's private helpers: argument checks, memory guards, numerics, compilation, threads, progress, HTML.

Nothing here is public; every room may use it (``tests/test_layout.py`` lets any module import its private names).
"""
