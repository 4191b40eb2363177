"""Benchmark contender: the workloads of bench/c/ncbench.c through zarr-python 3.

Run by scripts/bench with the pinned zarr3 environment. Prints "elapsed <seconds> checksum
<hex>" like ncbench (same checksum, computed with numpy). Exit status 3: cannot do this.

    zarr_python.py read_all|read_chunks|read_strided|read_series DIR ARRAY
    zarr_python.py write DIR ARRAY TYPE T Y X CT CY CX CODEC
    zarr_python.py open DIR [consolidated]
"""

import itertools
import sys
import time

import numpy as np
import zarr


def checksum(buf):
    b = np.ascontiguousarray(buf).view(np.uint8).reshape(-1)
    n = b.size
    step = 61 if n > (1 << 20) else 1
    s = b[::step].astype(np.uint64)
    k = np.arange(1, s.size + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        h = int((s * k).sum(dtype=np.uint64))
    return h ^ n


def report(t0, result):
    """Prints the time since t0, then the checksum of `result` (an int, or an array whose
    checksum is computed after the clock stops)."""
    elapsed = time.perf_counter() - t0
    h = result if isinstance(result, int) else checksum(result)
    print(f"elapsed {elapsed:.6f} checksum {h:016x}")


def fill_values(dtype, shape):
    """The values ncbench writes (same formula, vectorised), computed a slab of rows at a time
    so that the temporaries stay small next to the result (a 1 GiB uint16 variable is 512 Mi
    elements)."""
    n = int(np.prod(shape))
    row = shape[-1]
    out = np.empty(n, dtype=np.float32 if dtype == "float" else np.uint16)
    rng = np.random.default_rng(12345)
    step = max(row, (1 << 22) // row * row)
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        i = np.arange(lo, hi, dtype=np.int64)
        y, x = i // row, i % row
        smooth = ((x * 7 + y * 3) % 1000).astype(np.float64)
        noise = rng.integers(0, 256, hi - lo)
        if dtype == "float":
            out[lo:hi] = smooth * 0.01 + noise * 1e-4
        else:
            out[lo:hi] = smooth * 40 + (noise & 0x1F)
    return out.reshape(shape)


def compressors(codec, esize):
    from numcodecs import Blosc, Shuffle, Zlib, Zstd

    if codec == "none":
        return None, None
    if codec == "zlib1":
        return [Shuffle(elementsize=esize)], Zlib(level=1)
    if codec == "zstd3":
        return None, Zstd(level=3)
    if codec == "blosc-lz4":
        return None, Blosc(cname="lz4", clevel=5, shuffle=Blosc.SHUFFLE)
    raise SystemExit(f"unknown codec {codec}")


def main(argv):
    workload, where = argv[1], argv[2]
    if workload == "open":
        consolidated = len(argv) > 3 and argv[3] == "consolidated"
        t0 = time.perf_counter()
        if consolidated:
            g = zarr.open_consolidated(where, mode="r", zarr_format=2)
        else:
            g = zarr.open_group(where, mode="r", zarr_format=2, use_consolidated=False)
        h = 0
        for _, a in g.arrays():
            h = h * 31 + len(dict(a.attrs)) + a.ndim
        report(t0, h & (2**64 - 1))
        return 0
    name = argv[3]
    if workload == "write":
        tname, dims, codec = argv[4], [int(v) for v in argv[5:11]], argv[11]
        shape, chunks = dims[:3], dims[3:]
        data = fill_values(tname, shape)
        filters, compressor = compressors(codec, data.dtype.itemsize)
        t0 = time.perf_counter()
        a = zarr.create_array(
            store=where,
            name=name,
            shape=shape,
            chunks=chunks,
            dtype=data.dtype,
            filters=filters,
            compressors=compressor,
            fill_value=None,
            zarr_format=2,
            overwrite=True,
        )
        a[...] = data
        report(t0, data)
        return 0
    a = zarr.open_array(where, path=name, mode="r", zarr_format=2)
    t0 = time.perf_counter()
    if workload == "read_all":
        report(t0, a[...])
    elif workload == "read_strided":
        sl = tuple(slice(None, None, 4) if d >= a.ndim - 2 else slice(None) for d in range(a.ndim))
        report(t0, a[sl])
    elif workload == "read_series":
        sl = tuple(slice(None) if d == 0 else 0 for d in range(a.ndim))
        report(t0, a[sl])
    elif workload == "read_chunks":
        h, spent = 0, 0.0
        ranges = [range(0, n, c) for n, c in zip(a.shape, a.chunks)]
        for origin in itertools.product(*ranges):
            sl = tuple(slice(o, o + c) for o, c in zip(origin, a.chunks))
            t1 = time.perf_counter()
            block = a[sl]
            spent += time.perf_counter() - t1
            h = (h * 31 + checksum(block)) & (2**64 - 1)
        print(f"elapsed {spent:.6f} checksum {h:016x}")
    else:
        print(f"zarr_python.py: unknown workload {workload}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except (ValueError, KeyError, NotImplementedError) as e:
        print(f"zarr_python.py: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(3)
