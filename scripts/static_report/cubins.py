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


def read_object(obj, tools):
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([tools["cuobjdump"], "-xelf", "all", os.path.abspath(obj)], cwd=tmp,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True)
        cubins = sorted(f for f in os.listdir(tmp) if f.endswith(".cubin"))
        out = []
        for c in cubins:
            path = os.path.join(tmp, c)
            arch = re.search(r"\.(sm_\w+)\.cubin$", c)
            usage = res_usage(run([tools["cuobjdump"], "-res-usage", path]))
            if not usage:
                continue
            threads = max_threads(run([tools["cuobjdump"], "-elf", path]))
            sass = parse_sass(run([tools["nvdisasm"], "-gi", "-c", path]))
            out.append((arch.group(1) if arch else "?", usage, threads, sass))
        return out
