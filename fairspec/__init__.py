"""fairspec: a specification language for ML fairness requirements and its checker (see ARCHITECTURE.md)."""


from fairspec.meta import DISTRIBUTION, version


# The Python API (fairspec/api.py), loaded on first use so that `import fairspec` stays light.
__all__ = ["version", "check", "lint", "CheckReport", "FairspecError", "DISTRIBUTION"]


def __getattr__(name: str):
    if name in ("check", "lint", "CheckReport", "FairspecError"):
        from fairspec import api

        return getattr(api, name)
    raise AttributeError(f"module 'fairspec' has no attribute {name!r}")
