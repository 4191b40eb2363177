"""Benchmark: a netCDF-4 file read through its kerchunk reference set, against reading the file
itself. Run by `scripts/bench --references` with the pinned kerchunk environment.

The same ncbench workloads (bench/c/ncbench.c) run against:
  A  our library (preloaded) reading `file://<refs.json>#mode=zarr,reference`
  B  Debian's netcdf-c 4.9.0 reading the netCDF-4/HDF5 file
  C  netcdf-c 4.10.1 reading the netCDF-4/HDF5 file (through with-netcdf-4.10)
  D  zarr-python 3 reading the reference set through fsspec (whole reads only)
on a float32 variable (time, y, x) in 1 MiB chunks of deflate level 1 with shuffle. Every
contender must return the same checksum. Prints a table of ratios (contender time / ours, best of
--reps runs after --warmup) and saves it as CSV.

    references.py --target DIR --ncbench PATH --data-dir DIR --out-dir DIR
                  [--size 256M] [--reps 3] [--warmup 1] [--with-netcdf-410 PATH]
"""

import argparse
import csv
import datetime
import json
import os
import subprocess
import sys
import time

import netCDF4
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from zarr_python import checksum  # noqa: E402  (the checksum ncbench prints)

WORKLOADS = ["read_all", "read_chunks", "read_series"]


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(text[:-1]) * units[text[-1]]) if text[-1] in units else int(text)


def make(data_dir, size):
    """The netCDF-4 file and its reference set for a variable of `size` bytes, made once."""
    frames = max(4, size // (1024 * 1024 * 4) // 4 * 4)
    nc = os.path.join(data_dir, f"refs-{frames}.nc")
    refs = nc[:-3] + ".json"
    if os.path.exists(refs):
        return nc, refs
    from kerchunk.hdf import SingleHdf5ToZarr

    os.makedirs(data_dir, exist_ok=True)
    with netCDF4.Dataset(nc + ".part", "w") as d:
        d.createDimension("time", frames)
        d.createDimension("y", 1024)
        d.createDimension("x", 1024)
        v = d.createVariable("v", "f4", ("time", "y", "x"), zlib=True, complevel=1,
                             shuffle=True, chunksizes=(1, 512, 512))
        rng = np.random.default_rng(7)
        for t in range(frames):
            v[t] = (rng.standard_normal((1024, 1024)) * 10).round(1).astype("f4")
    os.rename(nc + ".part", nc)
    with open(refs + ".part", "w") as f:
        json.dump(SingleHdf5ToZarr(nc, inline_threshold=0).translate(), f)
    os.rename(refs + ".part", refs)
    return nc, refs


def ncbench(argv, env):
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {out.stderr.strip()}")
    _, elapsed, _, value = out.stdout.split()
    return float(elapsed), value


def zarr_python(refs, workload):
    import fsspec
    import zarr
    from zarr.storage import FsspecStore

    if workload != "read_all":
        return None
    t0 = time.perf_counter()
    fs = fsspec.filesystem("reference", fo=refs, asynchronous=True, remote_protocol="file")
    group = zarr.open_group(store=FsspecStore(fs, read_only=True), mode="r", zarr_format=2)
    data = group["v"][...]
    elapsed = time.perf_counter() - t0
    return elapsed, f"{checksum(data):016x}"


def main():
    ap = argparse.ArgumentParser(prog="scripts/bench --references")
    ap.add_argument("--target", required=True)
    ap.add_argument("--ncbench", required=True)
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--size", default="256M")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--with-netcdf-410", default="")
    args = ap.parse_args()
    nc, refs = make(args.data_dir, parse_size(args.size))
    lib = os.path.join(args.target, "release", "libnczarr_rs.so")
    base = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "RAYON_NUM_THREADS")}
    url = f"file://{refs}#mode=zarr,reference"
    contenders = {
        "A": lambda w: ncbench([args.ncbench, w, url, "v"],
                               dict(base, LD_PRELOAD=lib, NCZARR_RS_QUIET="1")),
        "B": lambda w: ncbench([args.ncbench, w, nc, "v"], base),
        "D": lambda w: zarr_python(refs, w),
    }
    if args.with_netcdf_410:
        contenders["C"] = lambda w: ncbench([args.with_netcdf_410, args.ncbench, w, nc, "v"],
                                            base)
    rows = []
    for workload in WORKLOADS:
        best, sums = {}, {}
        for name, run in contenders.items():
            times = []
            for rep in range(args.warmup + args.reps):
                got = run(workload)
                if got is None:
                    break
                if rep >= args.warmup:
                    times.append(got[0])
                sums[name] = got[1]
            if times:
                best[name] = min(times)
        if len(set(sums.values())) != 1:
            raise SystemExit(f"{workload}: contenders read different values: {sums}")
        for name, t in best.items():
            rows.append({"workload": workload, "contender": name, "seconds": f"{t:.4f}",
                         "ratio": f"{t / best['A']:.2f}"})
    print(f"reference set of {nc} ({os.path.getsize(nc) >> 20} MiB on disk)")
    print(f"{'workload':<12} {'contender':<9} {'seconds':>8} {'time/ours':>10}")
    for r in rows:
        print(f"{r['workload']:<12} {r['contender']:<9} {r['seconds']:>8} {r['ratio']:>10}")
    os.makedirs(args.out_dir, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y-%m-%d-%H%M%S")
    path = os.path.join(args.out_dir, f"references-{stamp}.csv")
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["workload", "contender", "seconds", "ratio"])
        w.writeheader()
        w.writerows(rows)
    print(f"csv: {path}")


if __name__ == "__main__":
    main()
