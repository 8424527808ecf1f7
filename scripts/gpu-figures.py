#!/usr/bin/env python3
"""The GPU run's answer in one table: the figures docs/gpu.md says the run
must give, beside the published anchors for the same GPU. Reads the run's
own files only (results.jsonl, probe.json, torch.json, build.txt) and
prints Markdown-style rows; a figure not measured says so.

    scripts/gpu-figures.py RUN_DIR GPU_NAME MODEL MIXTURE   # the presets' names
    scripts/gpu-figures.py --datasheet GPU_NAME             # its datasheet bandwidth alone
"""
import json
import os
import re
import sys

# Datasheet HBM bandwidth, GB/s, by the name nvidia-smi gives; the first
# match wins (the H100 NVL and PCIe before the SXM's plain "H100").
DATASHEET = [
    ("H200", 4800, "H200 HBM3e"),
    ("H100 NVL", 3900, "H100 NVL HBM3"),
    ("H100 PCIe", 2000, "H100 PCIe HBM2e"),
    ("H100", 3350, "H100 SXM HBM3"),
]

# Published anchors (docs/gpu.md has the sources): llama.cpp decode of an
# 8-9B Q4_K_M at one request, and PyTorch's device-to-device copy.
ANCHORS = {
    "H200": {"tg": "about 190-200 t/s (about 25% of the bandwidth roofline)", "copy": "about 4300 GB/s"},
    "H100": {"tg": "no published Q4_K_M figure; a 9B Q8_0 decodes at about 210 t/s (60% of 3.35 TB/s)",
             "copy": "about 88-90% of the datasheet"},
}


def datasheet(name):
    for key, gbs, what in DATASHEET:
        if key in name:
            return gbs, what
    return None, "unknown GPU: no datasheet figure"


def anchor(name, what):
    for key in ("H200", "H100"):
        if key in name:
            return ANCHORS[key][what]
    return "no anchor for this GPU"


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def records(path):
    out = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                if isinstance(r, dict) and "avg_ts" in r:
                    out.append(r)
    except OSError:
        pass
    return out


def partial_probe(path):
    """What a probe stopped before its end printed: its bandwidth lines."""
    p = {}
    try:
        with open(path) as f:
            for line in f:
                m = re.match(r"(memory|read) bandwidth: ([0-9.]+) GB/s", line)
                if m:
                    p["bw_gbs" if m.group(1) == "memory" else "read_bw_gbs"] = float(m.group(2))
    except OSError:
        pass
    if p:
        p["partial"] = True
    return p


def metric(r, name):
    """The measured phase's mean of a telemetry metric over the GPU devices."""
    tel = (r.get("telemetry") or {}).get("measure") or {}
    vals = [d["metrics"][name]["mean"] for d in tel.get("devices", [])
            if d.get("dev", -1) >= 0 and name in d.get("metrics", {})]
    return sum(vals) / len(vals) if vals else None


def pct(v):
    return "-" if v is None else f"{v:.0f}%"


def rate(r):
    ro = r.get("roofline") or {}
    eff = ro.get("efficiency")
    s = f"{r['avg_ts']:.1f} ± {r.get('stddev_ts', 0):.1f} t/s"
    if eff is not None:
        s += f", {100 * eff:.0f}% of the roofline ({ro.get('verdict', '?')})"
    if ro.get("achieved_gbs") and ro.get("peak_bw_gbs"):
        s += f", step bw {100 * ro['achieved_gbs'] / ro['peak_bw_gbs']:.0f}%"
    mem, dram, power = metric(r, "mem_util"), metric(r, "dram_bw_util"), metric(r, "power_w")
    s += f", mem {pct(mem)}, dram bw {pct(dram)}"
    if power:
        s += f", {power:.0f} W, {power / r['avg_ts']:.2f} J/token"
    return s


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--datasheet":
        gbs, what = datasheet(sys.argv[2])
        print(f"{gbs} ({what})" if gbs else "unknown")
        return 0
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    run, name, model, moe = sys.argv[1:5]
    rows = []
    build = ""
    try:
        with open(os.path.join(run, "build.txt")) as f:
            build = f.read().strip()
    except OSError:
        pass
    rows.append(("CUDA build", build or "not built", "4-8 min on 16 cores (about 125 .cu files for sm_90)"))
    sheet, what = datasheet(name)
    probe = load_json(os.path.join(run, "probe.json")) or partial_probe(os.path.join(run, "probe.txt"))
    if probe.get("bw_gbs"):
        bw = f"copy {probe['bw_gbs']:.0f} GB/s, read {probe.get('read_bw_gbs', 0):.0f} GB/s"
        if sheet:
            bw += f" ({100 * probe['bw_gbs'] / sheet:.0f}% of the datasheet)"
        if probe.get("partial"):
            bw += " (a probe stopped half-way: the figures it printed)"
    else:
        bw = "not probed"
    rows.append(("HBM bandwidth, probe", bw, f"{sheet} GB/s datasheet ({what}); achievable copy 88-90% of it" if sheet else what))
    torch = load_json(os.path.join(run, "torch.json")) or {}
    rows.append(("PyTorch device copy", f"{torch['copy_gbs_median']:.0f} GB/s" if torch.get("copy_gbs_median") else "not run",
                 anchor(name, "copy")))
    recs = records(os.path.join(run, "results.jsonl"))
    def quant(r, preset):
        # The cache names a synthetic model PRESET-TYPE-sSEED.gguf: its
        # type, or None for another model.
        base = os.path.basename(str(r.get("model_filename", "")))
        m = re.fullmatch(re.escape(preset) + r"-([a-z0-9_]+)-s[0-9]+\.gguf", base)
        return m.group(1) if m else None

    def of(r, preset):
        return quant(r, preset) is not None

    # The main runs' records: each type's pp and tg at -fa 0 and 1 (the
    # Q4_0 first: it is measured first; a type not measured says so).
    core = [r for r in recs if of(r, model) and r.get("n_depth", 0) == 0 and r.get("n_parallel", 1) in (0, 1)]
    types = list(dict.fromkeys([quant(r, model) for r in core] or ["q4_0"]))
    for q in types:
        for test in ("pp", "tg"):
            for fa in (0, 1):
                rs = [r for r in core if quant(r, model) == q and str(r.get("test", "")).startswith(test) and int(r.get("flash_attn") or 0) == fa]
                label = f"{model} {q} {rs[0]['test'] if rs else test} -fa {fa}"
                rows.append((label, rate(rs[0]) if rs else "not measured", anchor(name, "tg") if test == "tg" else "-"))
    for r in recs:
        if of(r, moe) and str(r.get("test", "")).startswith("tg"):
            rows.append((f"mixture {r['test']} -ncmoe {r.get('n_cpu_moe', 0)}", rate(r), "-"))
    grid = [r for r in recs if of(r, model) and (r.get("n_depth", 0) > 0 or r.get("n_parallel", 1) > 1)]
    for r in grid:
        if str(r.get("test", "")).startswith("tg"):
            rows.append((f"{r['test']} -fa {int(r.get('flash_attn') or 0)}", f"{r['avg_ts']:.1f} t/s", "-"))
    w = max(len(r[0]) for r in rows)
    print(f"| {'figure':<{w}} | measured | anchor |")
    print(f"| {'-' * w} | --- | --- |")
    for a, b, c in rows:
        print(f"| {a:<{w}} | {b} | {c} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
