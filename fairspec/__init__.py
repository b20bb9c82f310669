"""fairspec: a specification language for ML fairness requirements and its checker (see ARCHITECTURE.md)."""


# The distribution's name on the package index (the import name and the command are `fairspec`;
# "fairspec" on the index is an unrelated project).
DISTRIBUTION = "specfair"


def version() -> str:
    """The installed version of fairspec."""
    try:
        from importlib.metadata import version as _v

        return _v(DISTRIBUTION)
    except Exception:  # noqa: BLE001
        return "0.1.0"


# The Python API (fairspec/api.py), loaded on first use so that `import fairspec` stays light.
__all__ = ["version", "check", "lint", "CheckReport", "FairspecError", "DISTRIBUTION"]


def __getattr__(name: str):
    if name in ("check", "lint", "CheckReport", "FairspecError"):
        from fairspec import api

        return getattr(api, name)
    raise AttributeError(f"module 'fairspec' has no attribute {name!r}")
