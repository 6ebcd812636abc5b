#!/usr/bin/env python3
"""Static report of every compiled kernel, read from the built objects with cuobjdump/nvdisasm: the
command line of the static_report package beside this file (its __init__.py lists its parts).
`scripts/kernel_report.py --help` shows the usage; docs/kernel-report.md explains the report."""
import sys

from static_report.cli import main
# The pieces the tests drive on fixtures, reachable as `kernel_report.<name>` as before.
from static_report.configs import identify  # noqa: F401
from static_report.hot_loops import gmm_loop, memory_loop  # noqa: F401
from static_report.sass import loops_of, parse_sass  # noqa: F401

if __name__ == "__main__":
    sys.exit(main())
