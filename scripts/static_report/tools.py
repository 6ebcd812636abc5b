"""The NVIDIA tools and the build's CMake cache, and reading and writing report files. Every error
here exits 2 with one `kernel_report:` line (the check could not run)."""
import json
import os
import re
import subprocess
import sys


def fail(msg, code=2):
    print(f"kernel_report: {msg}", file=sys.stderr)
    sys.exit(code)


def cmake_cache(build):
    cache = {}
    path = os.path.join(build, "CMakeCache.txt")
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                m = re.match(r"^([A-Za-z_0-9]+):[A-Z]+=(.*)$", line.strip())
                if m:
                    cache[m.group(1)] = m.group(2)
    return cache


def run(cmd, env=None):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    if p.returncode != 0:
        fail(f"`{' '.join(cmd)}` failed: {p.stderr.strip().splitlines()[-1:] or p.returncode}")
    return p.stdout


def demangle(names):
    try:
        p = subprocess.run(["c++filt"], input="\n".join(names), stdout=subprocess.PIPE, text=True)
        out = p.stdout.splitlines()
        if p.returncode == 0 and len(out) == len(names):
            return out
    except OSError:
        pass
    return list(names)


def stable_name(demangled):
    """The kernel's name without what changes between builds (anonymous namespaces' hashes)."""
    return re.sub(r"_GLOBAL__N__\w+", "(anonymous namespace)", demangled)


def find_tools(args):
    cache = cmake_cache(args.build) if args.build else {}
    cuobjdump = args.cuobjdump or cache.get("MOEBENCH_CUOBJDUMP", "")
    nvdisasm = args.nvdisasm or cache.get("MOEBENCH_NVDISASM", "")
    for what, p in (("cuobjdump", cuobjdump), ("nvdisasm", nvdisasm)):
        if not p or p.endswith("-NOTFOUND") or not os.access(p, os.X_OK):
            fail(f"{what} not found (got '{p}'): run scripts/setup.sh, which unpacks NVIDIA's pinned wheel, "
                 f"or pass --{what} PATH")
    moebench = args.moebench or os.path.join(args.build, "bin", "moebench")
    if not os.access(moebench, os.X_OK):
        fail(f"{moebench} not found: build the project first, or pass --moebench PATH")
    versions = {}
    for what, p in (("cuobjdump", cuobjdump), ("nvdisasm", nvdisasm)):
        v = re.findall(r"V\d+\.\d+\.\d+", run([p, "--version"]))
        versions[what] = v[-1] if v else "?"
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(nvdisasm) + os.pathsep + env.get("PATH", "")
    return {"cuobjdump": cuobjdump, "nvdisasm": nvdisasm, "moebench": os.path.abspath(moebench),
            "versions": versions, "env": env}


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        fail(f"cannot read report {path}: {e}")


def write(path, text):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)
