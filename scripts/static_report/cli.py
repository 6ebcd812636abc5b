"""Static report of every compiled kernel, read from the built objects with cuobjdump/nvdisasm.

    scripts/kernel_report.py BUILD [--json OUT.json] [--markdown OUT.md] [--check BASELINE]
    scripts/kernel_report.py --report REPORT.json --check BASELINE      (gate a saved report)
    scripts/kernel_report.py BUILD --update results/static/sm90a.json   (a deliberate change)

Writes `moebench/kernel-report@1` JSON and a markdown table; --check exits 1 when the report
regresses against the baseline (docs/kernel-report.md says what counts). python3 stdlib only.
"""
import argparse
import json
import os
import sys

from .gate import check
from .markdown import markdown
from .report import build_report
from .tools import fail, find_tools, load, write


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build", nargs="?", help="the build folder (holds CMakeFiles/**/*.cu.o and bin/moebench)")
    ap.add_argument("--report", help="gate or print this saved report instead of reading a build")
    ap.add_argument("--json", help="write the report here")
    ap.add_argument("--markdown", help="write the markdown table here ('-': stdout)")
    ap.add_argument("--check", metavar="BASELINE", help="exit 1 when the report regresses against BASELINE")
    ap.add_argument("--update", metavar="BASELINE", help="write the report as the new baseline (a deliberate change)")
    ap.add_argument("--cuobjdump")
    ap.add_argument("--nvdisasm")
    ap.add_argument("--moebench")
    args = ap.parse_args()
    if bool(args.build) == bool(args.report):
        fail("give either a build folder or --report REPORT.json (see --help)")
    if args.report:
        rep = load(args.report)
    else:
        if not os.path.isdir(args.build):
            fail(f"build folder {args.build} does not exist: run scripts/setup.sh {args.build} first")
        rep = build_report(args.build, find_tools(args))
    text = json.dumps(rep, indent=1, sort_keys=False) + "\n"
    if args.json:
        write(args.json, text)
    if args.update:
        write(args.update, text)
        print(f"kernel_report: baseline {args.update} updated ({len(rep['kernels'])} kernels); commit it with the change "
              f"and a line saying why")
    if args.markdown:
        md = markdown(rep)
        if args.markdown == "-":
            sys.stdout.write(md)
        else:
            write(args.markdown, md)
    if args.check:
        bad, notes = check(load(args.check), rep)
        for n in notes:
            print(f"note: {n}")
        if bad:
            for b in bad:
                print(f"REGRESSION: {b}")
            print(f"kernel_report: {len(bad)} regression(s) against {args.check}. If the change is deliberate, run "
                  f"`scripts/kernel_report.py BUILD --update {args.check}` and commit the baseline with a line saying why.")
            return 1
        print(f"kernel_report: {len(rep['kernels'])} kernels, no regression against {args.check}")
    return 0
