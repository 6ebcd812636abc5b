"""Occupancy on Hopper: CTAs per SM allowed by registers, shared memory, threads and the CTA cap."""
import math

# Hopper (H100 and H200 are both sm_90 with the same SM): the limits occupancy is computed from.
DEVICES = {
    "h100": {"regs": 65536, "smem": 228 * 1024, "smem_block": 227 * 1024, "threads": 2048, "ctas": 32},
    "h200": {"regs": 65536, "smem": 228 * 1024, "smem_block": 227 * 1024, "threads": 2048, "ctas": 32},
}
REG_GRANULE = 256    # registers are allocated per warp in blocks of 256
SMEM_RESERVED = 1024  # the driver reserves 1 KB of shared memory per CTA on sm_8x/sm_9x


def occupancy(regs, threads, smem, reserved_counted=False):
    """smem: the kernel's static + dynamic shared memory, the 1 KB reserved slice included when
    reserved_counted (cuobjdump 13 folds it into SHARED) and added here otherwise."""
    warps = math.ceil(threads / 32)
    own = smem - SMEM_RESERVED if reserved_counted else smem
    per_warp = math.ceil(max(regs, 1) * 32 / REG_GRANULE) * REG_GRANULE
    out = {}
    for dev, d in DEVICES.items():
        lim = {
            "registers": (d["regs"] // per_warp) // warps,
            "shared_memory": d["smem"] // (own + SMEM_RESERVED) if own <= d["smem_block"] else 0,
            "threads": d["threads"] // (warps * 32),
            "blocks": d["ctas"],
        }
        ctas = min(lim.values())
        out[dev] = {"ctas_per_sm": ctas, "limited_by": min(lim, key=lambda k: (lim[k], k != "registers")),
                    "warps_per_sm": ctas * warps, "limits": lim}
    return out


def occupancy_of(k):
    return occupancy(k["registers"], k["threads"], k["static_smem_bytes"] + k["dynamic_smem_bytes"],
                     k.get("smem_reserved_counted", False))
