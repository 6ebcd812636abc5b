"""The static kernel report (scripts/kernel_report.py is its command line), by what each part does:

    tools.py        the NVIDIA tools, the build's CMake cache, reading and writing reports
    cubins.py       reading the cubins of one object: resources, launch bounds, SASS
    sass.py         SASS parsed into instructions with their source lines, and its loops
    configs.py      a kernel's name mapped to its family and the config names the tuner uses
    occupancy.py    CTAs per SM on H100/H200 from registers, threads and shared memory
    hot_loops.py    the gmm k-loop, the gather/combine memory loops and their slot loops
    router_loops.py the router's row loop and its cost per row on each preset's path
    slot_loops.py   the aligner's warp-instructions per routed slot, from its tagged loops
    pdl.py          programmatic dependent launch: where a kernel waits (ACQBULK) and triggers (PREEXIT)
    report.py       every kernel of a build, as one moebench/kernel-report@1 document
    markdown.py     the report as a markdown table
    fp8_wgmma.py    the rules every fp8 wgmma kernel must meet (E4M3 warpgroup MMA, TMA, no local memory)
    fp8_encode.py   the rule for kernels that write e4m3 codes (the hardware f32 -> e4m3x2 conversion)
    layer_kernels.py kernels per layer call by preset, path and token count, and their rules
    gate.py         the CI gate: a report's regressions against a baseline, and those rules
    cli.py          the command line

Python 3 standard library only. docs/kernel-report.md says what every figure means.
"""

SCHEMA = "moebench/kernel-report@1"
