#!/usr/bin/env python3
"""A second reference for the probe's bandwidth: a device-to-device copy
through PyTorch, timed with CUDA events. Counts the bytes read and written
(2 x size per copy), as tokbench's probe does. Prints one JSON line; exit 3
when PyTorch or a CUDA device is absent (the caller says it was skipped).

    scripts/gpu-copy.py [SIZE_MIB] [ITERS]
"""
import json
import os
import sys


def main():
    args = sys.argv[1:]
    out = None
    if "--out" in args:
        i = args.index("--out")
        if i + 1 >= len(args):
            print("--out needs a file", file=sys.stderr)
            return 2
        out = args[i + 1]
        del args[i:i + 2]
    size_mib = int(args[0]) if len(args) > 0 else 4096
    iters = int(args[1]) if len(args) > 1 else 20
    try:
        import torch
    except ImportError as e:
        print(f"PyTorch is not importable here: {e}", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("PyTorch sees no CUDA device", file=sys.stderr)
        return 3
    n = size_mib << 20
    # Free memory decides the size: two buffers, a quarter of what is free.
    free, _ = torch.cuda.mem_get_info()
    n = min(n, free // 4)
    src = torch.empty(n, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    src.fill_(1)
    for _ in range(3):
        dst.copy_(src)
    torch.cuda.synchronize()
    runs = []
    for _ in range(5):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            dst.copy_(src)
        end.record()
        end.synchronize()
        s = start.elapsed_time(end) / 1e3
        runs.append(2 * n * iters / s / 1e9)
    runs.sort()
    line = json.dumps({
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "bytes": n,
        "copies": iters,
        "copy_gbs_median": runs[len(runs) // 2],
        "copy_gbs_runs": runs,
    })
    print(line)
    if out:
        with open(out + ".part", "w") as f:
            f.write(line + "\n")
        os.replace(out + ".part", out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
