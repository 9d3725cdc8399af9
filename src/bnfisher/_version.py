"""The version of bnfisher, in one place (read by the package and by the build)."""

__version__ = "0.3.0.dev0"
