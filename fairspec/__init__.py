"""fairspec: a specification language for ML fairness requirements and its checker (see ARCHITECTURE.md)."""


def version() -> str:
    """The installed version of fairspec."""
    try:
        from importlib.metadata import version as _v

        return _v("fairspec")
    except Exception:  # noqa: BLE001
        return "0.1.0"
