"""The distribution's name and the installed version (no other import: any module may use it)."""

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
