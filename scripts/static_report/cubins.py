"""Reading one compiled object: its cubins, and per kernel its resources (cuobjdump -res-usage),
launch bound (the ELF's .nv.info) and SASS (nvdisasm -gi, with inlined source lines)."""
import os
import re
import subprocess
import tempfile

from .sass import parse_sass
from .tools import run


def res_usage(text):
    out, cur = {}, None
    for line in text.splitlines():
        m = re.match(r"\s*Function (\S+):", line)
        if m:
            cur = m.group(1)
            continue
        if cur and "REG:" in line:
            out[cur] = {k: int(v) for k, v in re.findall(r"(\w+)(?:\[\d+\])?:(\d+)", line)}
            cur = None
    return out


def max_threads(elf_text):
    out, cur = {}, None
    lines = elf_text.splitlines()
    for n, line in enumerate(lines):
        m = re.match(r"^\.nv\.info\.(\S+)$", line.strip())
        if m:
            cur = m.group(1)
        elif cur and "EIATTR_MAX_THREADS" in line or cur and "EIATTR_REQNTID" in line:
            for follow in lines[n + 1:n + 4]:
                v = re.search(r"Value:\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)", follow)
                if v:
                    x, y, z = (int(g, 16) for g in v.groups())
                    out.setdefault(cur, x * y * z)
                    break
    return out


def reserved_in_shared(elf_text):
    """Whether cuobjdump's SHARED already holds the 1 KB the driver reserves per CTA: a cubin with
    a `.nv.shared.reserved.N` section has it folded into every kernel that uses shared memory
    (cuobjdump 13); older cubins leave it out, and the occupancy adds it."""
    return re.search(r"\.nv\.shared\.reserved\.\d+", elf_text) is not None


def resources(res_text, elf_text):
    """Per kernel: cuobjdump -res-usage's figures, and `reserved_counted`: whether its SHARED
    holds the reserved 1 KB already."""
    usage, reserved = res_usage(res_text), reserved_in_shared(elf_text)
    for use in usage.values():
        use["reserved_counted"] = reserved and use.get("SHARED", 0) > 0
    return usage


def read_object(obj, tools):
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([tools["cuobjdump"], "-xelf", "all", os.path.abspath(obj)], cwd=tmp,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True)
        cubins = sorted(f for f in os.listdir(tmp) if f.endswith(".cubin"))
        out = []
        for c in cubins:
            path = os.path.join(tmp, c)
            arch = re.search(r"\.(sm_\w+)\.cubin$", c)
            res = run([tools["cuobjdump"], "-res-usage", path])
            if not res_usage(res):
                continue
            elf = run([tools["cuobjdump"], "-elf", path])
            usage, threads = resources(res, elf), max_threads(elf)
            sass = parse_sass(run([tools["nvdisasm"], "-gi", "-c", path]))
            out.append((arch.group(1) if arch else "?", usage, threads, sass))
        return out
