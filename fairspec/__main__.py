"""`python -m fairspec ...`: the same command line as `fairspec ...`."""

import sys

from fairspec.cli import main

if __name__ == "__main__":
    sys.exit(main())
