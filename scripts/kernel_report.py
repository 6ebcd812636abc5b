#!/usr/bin/env python3
"""Static report of every compiled kernel, read from the built objects with cuobjdump/nvdisasm: the
command line of the static_report package beside this file (its __init__.py lists its parts).
`scripts/kernel_report.py --help` shows the usage; docs/kernel-report.md explains the report."""
import os
import sys

# The package sits beside this file, also when the file is loaded from elsewhere (the tests do).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from static_report.cli import main  # noqa: E402
# The pieces the tests drive on fixtures, reachable as `kernel_report.<name>` as before.
from static_report.configs import identify  # noqa: E402,F401
from static_report.fp8_encode import check_fp8_encode, encode_facts  # noqa: E402,F401
from static_report.fp8_wgmma import check_fp8_wgmma, wgmma_facts  # noqa: E402,F401
from static_report.hot_loops import first_load, gmm_loop, memory_loop  # noqa: E402,F401
from static_report.pdl import missing_waits, pdl_of  # noqa: E402,F401
from static_report.router_loops import router_regions  # noqa: E402,F401
from static_report.sass import loops_of, parse_sass  # noqa: E402,F401

if __name__ == "__main__":
    sys.exit(main())
