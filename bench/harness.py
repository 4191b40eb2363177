"""The benchmark harness behind scripts/bench: every case, every contender, same run.

Contenders (all on the same datasets, in the same run):
  A  ours      bench/c/ncbench with our library preloaded
  A1 ours, 1 thread   the same with one worker thread (RAYON_NUM_THREADS=1, which also turns
                      read-ahead off on local stores): A1/A is how much using every core gave, and
                      reference/A1 our speed per core against the one-core references (B, C),
                      which says how many cores a target needs where ours is CPU-bound
  B  nc-4.9    the same program on Debian's netcdf-c 4.9.0 (built-in NCZarr; uncompressed only)
  C  nc-4.10   the same program under with-netcdf-4.10 (netcdf-c 4.10.1 with codec plugins)
  D  zarr-py   bench/zarr_python.py on zarr-python 3
  E  zarrs     bench/zarrs (the zarrs crate)
plus `cat` of the chunk files (page-cache bound) for uncompressed whole reads.

A case is one line of CASES-building code below (workload x type x chunking x codec x store);
a contender that cannot run a case reports "n/a (reason)" instead of a time. Datasets are
written once by zarr-python (pure Zarr v2, the one writer whose codec metadata every reader
agrees on) and cached under the data directory. Page cache cannot be dropped here, so every
number is warm-cache: each case runs `--reps` times and the median is reported, with the peak
RSS of the process (ru_maxrss from wait4) next to it. Ratios are "reference time / our time".

Two promises are checked case by case besides the speed targets: on S3, the requests (each S3
case of ours and of curl runs once more, untimed, through a second s3s-fs on the same data that
logs every request: s3_requests.py counts them; a whole read must fetch each chunk object in
exactly one GET, a consolidated open must be one GET, nothing may send a HEAD, and a run that
breaks one of these fails like a wrong checksum), and our peak RSS against the bound of
rss_bound.py (reported, not failed: the machine moves it).
"""

import argparse
import csv
import json
import datetime
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field

import rss_bound
import s3_requests

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MiB = 1 << 20
# The bucket, access key and secret of the loopback s3s-fs server (see scripts/s3-server).
S3_BUCKET = "bench"
S3_ACCESS = "nczarr-test"
S3_SECRET = "nczarr-test-secret"
CONTENDERS = ["A", "A1", "B", "C", "D", "E"]
# Contenders that run our library: what is "not available" for another is a failure for them.
OURS = ("A", "A1")
# Contenders whose S3 requests are counted: ours, and curl as the counter's own check.
COUNTED = ("A", "cat")
LABEL = {
    "A": "ours",
    "A1": "ours 1 thread",
    "B": "nc-4.9.0",
    "C": "nc-4.10.1",
    "D": "zarr-python",
    "E": "zarrs",
    "cat": "cat / curl",
}
TYPES = {"float": 4, "ushort": 2}
CODECS = ["none", "zlib1", "zstd3", "blosc-lz4"]
READS = ["read_all", "read_chunks", "read_strided", "read_series"]
# Stores: name -> why it cannot run yet (None: available). Zip and S3 light up when the
# library and a server for them exist; see store_location().
STORES = ["file", "zip", "s3"]


@dataclass
class Case:
    workload: str
    dtype: str = ""
    chunking: str = ""
    codec: str = ""
    store: str = "file"
    extra: str = ""

    def name(self):
        parts = [self.workload, self.dtype, self.chunking, self.codec, self.store, self.extra]
        return "/".join(p for p in parts if p)


@dataclass
class Result:
    case: Case
    who: str
    times: list = field(default_factory=list)
    rss_kib: int = 0
    cpu: list = field(default_factory=list)
    status: str = "ok"
    checksum: str = ""
    # S3 cases of ours and curl: what one more run, untimed, asked of a counting server.
    requests: object = None
    # Ours: the peak RSS the project promises to stay within for this case (rss_bound.py).
    rss_bound: object = None

    def median(self):
        return statistics.median(self.times) if self.times else None


def geometry(dtype, chunking, size):
    """Variable shape (T, Y, X) and chunk shape for a variable of `size` bytes."""
    esize = TYPES[dtype]
    y = x = 1024 if size >= 64 * MiB else 256
    t = max(1, size // (esize * y * x))
    if chunking == "big":  # 16 MiB chunks at full size
        ct = max(1, min(t, 16 * MiB // (esize * y * x)))
        return (t, y, x), (ct, y, x)
    # 1 MiB chunks
    per = MiB // esize
    cy = min(y, 512)
    cx = min(x, per // cy)
    return (t, y, x), (1, cy, cx)


# The S3 cases of a smoke run: enough to see every request promise kept (or broken).
QUICK_S3 = {"read_all/float/small/none/s3", "read_all/float/small/zstd3/s3",
            "read_series/float/small/zstd3/s3", "write/float/small/zstd3/s3",
            "open1000/s3/plain", "open1000/s3/consolidated"}


def build_cases(args):
    cases = []
    for dtype in TYPES:
        for chunking in ["big", "small"]:
            for codec in CODECS:
                for store in STORES:
                    for w in READS + ["write"]:
                        cases.append(Case(w, dtype, chunking, codec, store))
    for store in STORES:
        for consolidated in ["plain", "consolidated"]:
            cases.append(Case("open1000", store=store, extra=consolidated))
    for store in STORES:
        cases.append(Case("write1000", store=store))
    if args.only:
        rx = re.compile(args.only)
        cases = [c for c in cases if rx.search(c.name())]
    if args.quick:
        keep = {"read_all", "read_chunks", "read_strided", "read_series", "write", "open1000",
                "write1000"}
        cases = [
            c
            for c in cases
            if c.workload in keep
            and c.dtype in ("", "float")
            and c.chunking in ("", "small")
            and c.codec in ("", "none", "zstd3", "zlib1")
            and (c.store == "file" or c.name() in QUICK_S3)
        ]
    return cases


class Env:
    def __init__(self, args):
        self.args = args
        args.target = os.path.abspath(args.target)
        self.lib = os.path.join(args.target, "release", "libnczarr_rs.so")
        self.ncbench = os.path.join(args.target, "bench", "ncbench")
        self.zarrs = os.path.join(args.target, "zarrs", "release", "zarrs-bench")
        self.zarr_py = args.zarr_python
        self.with410 = args.with_netcdf_410
        self.data = os.path.join(os.path.abspath(args.data_dir), f"{args.size // MiB}M")
        os.makedirs(self.data, exist_ok=True)
        self.scratch = os.path.join(self.data, "scratch")
        # A thread count inherited from the caller would limit every contender, not only A1.
        dropped = ("LD_PRELOAD", "LD_LIBRARY_PATH", "RAYON_NUM_THREADS")
        base = {k: v for k, v in os.environ.items() if k not in dropped}
        base["NCZARR_RS_QUIET"] = "1"
        self.base_env = base
        self.s3_dir = os.path.join(self.data, "s3")
        self.s3_port = None
        # Where timed S3 runs connect: the server, or the proxy that simulates a link to it.
        self.s3_timed_port = None
        self.s3_link = args.s3_link
        self.s3_count_port = None
        self.s3_count_log = None
        self.open_rss = {}

    # ---- stores ---------------------------------------------------------------------------

    def s3_env(self):
        """The environment that points a netCDF library at the loopback S3 server."""
        return {
            "AWS_ENDPOINT_URL": f"http://127.0.0.1:{self.s3_timed_port}",
            "AWS_ACCESS_KEY_ID": S3_ACCESS,
            "AWS_SECRET_ACCESS_KEY": S3_SECRET,
            "AWS_REGION": "us-east-1",
        }

    def s3_server(self):
        """Starts s3s-fs on loopback once (stopped when the harness exits)."""
        if self.s3_port is None:
            self.s3_port = start_s3s_fs(self.s3_dir, os.environ)
            self.s3_timed_port = self.s3_port
            if self.s3_link:
                self.s3_timed_port = start_latency_proxy(self.s3_port, self.s3_link)
        return os.path.join(self.s3_dir, "data", S3_BUCKET)

    def s3_counting_server(self):
        """Starts, once, a second s3s-fs on the same bucket directory that logs every request
        it serves (see s3_requests.py); returns (port, log path). Timed runs never go through
        it: its logging costs the server time."""
        if self.s3_count_port is None:
            self.s3_server()
            counted = self.s3_dir + "-counted"
            os.makedirs(counted, exist_ok=True)
            link = os.path.join(counted, "data")
            if not os.path.islink(link):
                os.symlink(os.path.join(self.s3_dir, "data"), link)
            self.s3_count_port = start_s3s_fs(
                counted, dict(os.environ, RUST_LOG="s3s::service=debug"))
            self.s3_count_log = os.path.join(counted, "server.log")
        return self.s3_count_port, self.s3_count_log

    def location(self, store, src, mode):
        """(URL, extra environment) of the dataset directory `src` on `store`: the directory
        itself, a stored (uncompressed) zip of it in the root layout zarr-python writes, or a
        copy served by s3s-fs (hard links, so no data is duplicated)."""
        name = os.path.basename(src)
        if store == "file":
            return f"file://{src}#mode={mode},file", {}
        if store == "zip":
            archive = src + ".zip"
            if not os.path.exists(archive + ".done"):
                import zipfile
                with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as z:
                    for root, _, files in os.walk(src):
                        for f in sorted(files):
                            full = os.path.join(root, f)
                            z.write(full, os.path.relpath(full, src))
                open(archive + ".done", "w").close()
            return f"file://{archive}#mode={mode},zip", {}
        if store == "s3":
            bucket = self.s3_server()
            copy = os.path.join(bucket, name)
            if not os.path.exists(copy + ".done"):
                shutil.rmtree(copy, ignore_errors=True)
                shutil.copytree(src, copy, copy_function=os.link)
                open(copy + ".done", "w").close()
            return f"s3://{S3_BUCKET}/{name}#mode={mode},s3", self.s3_env()
        raise RuntimeError(f"unknown store {store}")

    def write_location_of(self, store, who):
        """Where a write by `who` lands: (URL, extra environment, the written .zarray as a
        path or as (archive, entry), the object to remove before writing)."""
        if store == "file":
            dest = os.path.join(self.scratch, f"{who}.zarr")
            return (f"file://{dest}#mode=nczarr,file", {}, os.path.join(dest, "data", ".zarray"),
                    dest)
        if store == "zip":
            dest = os.path.join(self.scratch, f"{who}.zip")
            return f"file://{dest}#mode=nczarr,zip", {}, (dest, f"{who}/data/.zarray"), dest
        if store == "s3":
            dest = os.path.join(self.s3_server(), f"scratch-{who}.zarr")
            return (f"s3://{S3_BUCKET}/scratch-{who}.zarr#mode=nczarr,s3", self.s3_env(),
                    os.path.join(dest, "data", ".zarray"), dest)
        raise RuntimeError(f"unknown store {store}")

    def write_location(self, store, who):
        """(URL, extra environment) of a fresh write: whatever an earlier write left is gone."""
        os.makedirs(self.scratch, exist_ok=True)
        url, extra, _, dest = self.write_location_of(store, who)
        if os.path.isdir(dest):
            shutil.rmtree(dest)
        elif os.path.exists(dest):
            os.remove(dest)
        return url, extra

    def open_rss_kib(self, case):
        """Peak RSS (KiB) of our library opening the dataset a case reads, or the one our write
        left, on the case's store, and inquiring all of it: what a process holds before any data
        moves. Measured once per dataset and store."""
        key = (case.workload == "write", case.dtype, case.chunking, case.codec, case.store)
        if key not in self.open_rss:
            if case.workload == "write":
                url, extra = self.write_location_of(case.store, "A")[:2]
            else:
                url, extra = self.location(case.store, self.dataset(case), "zarr")
            argv, run_env = self.nc_argv("A", [self.ncbench, "open", url])
            self.open_rss[key] = Runner.run(argv, dict(run_env, **extra), "self")[1]
        return self.open_rss[key]

    # ---- datasets -------------------------------------------------------------------------

    def dataset(self, case):
        """Directory of the read dataset of a case, generated on first use by zarr-python."""
        path = os.path.join(self.data, f"{case.dtype}-{case.chunking}-{case.codec}.zarr")
        stamp = path + ".done"
        if not os.path.exists(stamp):
            shutil.rmtree(path, ignore_errors=True)
            (t, y, x), (ct, cy, cx) = geometry(case.dtype, case.chunking, self.args.size)
            argv = [self.zarr_py, os.path.join(ROOT, "bench", "zarr_python.py"), "write", path,
                    "data", case.dtype, t, y, x, ct, cy, cx, case.codec]
            log(f"  generating {os.path.basename(path)} ({t}x{y}x{x}, chunks {ct}x{cy}x{cx})")
            r = subprocess.run([str(a) for a in argv], env=self.base_env, capture_output=True,
                               text=True)
            if r.returncode != 0:
                raise RuntimeError(f"generating {path}: {r.stderr.strip()}")
            # Its write-back must not land in the first runs that read it.
            os.sync()
            open(stamp, "w").close()
        return path

    def many_vars(self, consolidated):
        """A dataset with 1000 small variables, written by our library through stock ncgen."""
        kind = "consolidated" if consolidated else "plain"
        path = os.path.join(self.data, f"many-{kind}.zarr")
        stamp = path + ".done"
        if not os.path.exists(stamp):
            shutil.rmtree(path, ignore_errors=True)
            cdl = os.path.join(self.data, "many.cdl")
            with open(cdl, "w") as f:
                f.write("netcdf many {\ndimensions:\n  t = 10 ;\nvariables:\n")
                for i in range(1000):
                    f.write(f"  float v{i}(t) ;\n    v{i}:units = \"m\" ;\n"
                            f"    v{i}:long_name = \"variable {i}\" ;\n")
                f.write("data:\n")
                for i in range(1000):
                    f.write(f" v{i} = " + ", ".join(str(i + k) for k in range(10)) + " ;\n")
                f.write("}\n")
            mode = "nczarr,file" + (",consolidated" if consolidated else "")
            env = dict(self.base_env, LD_PRELOAD=self.lib)
            r = subprocess.run(["ncgen", "-4", "-o", f"file://{path}#mode={mode}", cdl], env=env,
                               capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(f"generating {path}: {r.stderr.strip()}")
            open(stamp, "w").close()
        return path

    # ---- how each contender runs a case ---------------------------------------------------

    def argv(self, case, who):
        """(argv, env, timed_by) for a contender, or a string saying why it cannot run."""
        if case.workload == "open1000":
            return self.open_argv(case, who)
        if case.workload == "write1000":
            return self.write_each_argv(case, who)
        if who == "B" and case.codec != "none":
            return "n/a (Debian 4.9.0 has no codec filters)"
        if case.workload == "write":
            return self.write_argv(case, who)
        src = self.dataset(case)
        url, extra = self.location(case.store, src, "zarr")
        if case.store == "s3" and who == "cat":
            return self.curl_argv(case, src)
        if case.store != "file" and who in ("cat", "D", "E"):
            return f"n/a (not wired for the {case.store} store)"
        if who == "cat":
            if case.workload != "read_all" or case.codec != "none":
                return "n/a"
            chunks = sorted(
                os.path.join(src, "data", n)
                for n in os.listdir(os.path.join(src, "data"))
                if n[0].isdigit()
            )
            return ["cat"] + chunks, self.base_env, "wall"
        if who in ("A", "A1", "B", "C"):
            argv, run_env = self.nc_argv(who, [self.ncbench, case.workload, url, "data"])
            return argv, dict(run_env, **extra), "self"
        if who == "D":
            return [self.zarr_py, os.path.join(ROOT, "bench", "zarr_python.py"), case.workload,
                    src, "data"], self.base_env, "self"
        if who == "E":
            if not os.path.exists(self.zarrs):
                return "n/a (zarrs program not built)"
            return [self.zarrs, case.workload, src, "data"], self.base_env, "self"
        return "n/a"

    def curl_argv(self, case, src):
        """The plain concurrent-GET client for S3 whole reads: curl fetching every chunk
        object of the variable, signed, 64 transfers at a time, into /dev/null."""
        if case.workload != "read_all":
            return "n/a"
        names = sorted(n for n in os.listdir(os.path.join(src, "data")) if n[0].isdigit())
        base = f"http://127.0.0.1:{self.s3_timed_port}/{S3_BUCKET}/{os.path.basename(src)}/data"
        argv = ["curl", "--silent", "--fail", "--parallel", "--parallel-max", "64",
                "--aws-sigv4", "aws:amz:us-east-1:s3", "--user", f"{S3_ACCESS}:{S3_SECRET}",
                "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD"]
        for n in names:
            argv += [f"{base}/{n}", "-o", "/dev/null"]
        return argv, self.base_env, "wall"

    def nc_argv(self, who, argv):
        """Runs argv on one netCDF implementation; returns (argv, env)."""
        if who == "A":
            return argv, dict(self.base_env, LD_PRELOAD=self.lib)
        if who == "A1":
            return argv, dict(self.base_env, LD_PRELOAD=self.lib, RAYON_NUM_THREADS="1")
        if who == "B":
            return argv, self.base_env
        if not self.with410:
            raise RuntimeError("with-netcdf-4.10 not found")
        return [self.with410] + argv, self.base_env

    def write_argv(self, case, who):
        (t, y, x), (ct, cy, cx) = geometry(case.dtype, case.chunking, self.args.size)
        dims = [case.dtype, t, y, x, ct, cy, cx, case.codec]
        if case.store != "file" and who in ("D", "E"):
            return f"n/a (not wired for the {case.store} store)"
        url, extra = self.write_location(case.store, who)
        dest = os.path.join(self.scratch, f"{who}.zarr")
        shutil.rmtree(dest, ignore_errors=True)
        if who in ("A", "A1", "B", "C"):
            argv, env = self.nc_argv(who, [self.ncbench, "write", url, "data"] + dims)
            return [str(a) for a in argv], dict(env, **extra), "self"
        if who == "D":
            return [str(a) for a in [self.zarr_py, os.path.join(ROOT, "bench", "zarr_python.py"),
                                     "write", dest, "data"] + dims], self.base_env, "self"
        if who == "E":
            if not os.path.exists(self.zarrs):
                return "n/a (zarrs program not built)"
            # zarrs writes every chunk of an array whose metadata exist: those of the read
            # dataset with the same geometry and codec.
            src = self.dataset(case)
            os.makedirs(os.path.join(dest, "data"))
            for meta in (".zgroup", ".zattrs"):
                if os.path.exists(os.path.join(src, meta)):
                    shutil.copy(os.path.join(src, meta), dest)
            shutil.copy(os.path.join(src, "data", ".zarray"), os.path.join(dest, "data"))
            return [self.zarrs, "write", dest, "data"], self.base_env, "self"
        return "n/a"

    def write_each_argv(self, case, who):
        """1000 variables written one at a time (ncbench write_each): netCDF's programs only.
        On the file store the dataset goes to a directory in memory (/dev/shm) when there is
        one: on a disk, the kernel's cost of creating files where many were deleted lately
        (every earlier run's) is the same for every contender, varies several-fold from run to
        run, and would hide the libraries' own work."""
        if who not in ("A", "A1", "B", "C"):
            return "n/a (a netCDF workload)"
        if case.store == "file" and os.path.isdir("/dev/shm"):
            memory = os.path.join("/dev/shm", f"nczarr-rs-bench-{os.getpid()}")
            if not os.path.isdir(memory):
                import atexit
                os.makedirs(memory)
                atexit.register(shutil.rmtree, memory, True)
            dest = os.path.join(memory, f"{who}.zarr")
            shutil.rmtree(dest, ignore_errors=True)
            url, extra = f"file://{dest}#mode=nczarr,file", {}
        else:
            url, extra = self.write_location(case.store, who)
        argv, env = self.nc_argv(who, [self.ncbench, "write_each", url, "1000"])
        return argv, dict(env, **extra), "self"

    def open_argv(self, case, who):
        consolidated = case.extra == "consolidated"
        src = self.many_vars(consolidated)
        if case.store != "file" and who in ("D", "E"):
            return f"n/a (not wired for the {case.store} store)"
        if who in ("A", "A1", "B", "C"):
            # What `ncdump -h` does (every variable and attribute inquired), timed inside the
            # process so that start-up costs (larger for the 4.10.1 wrapper) do not count.
            mode = "nczarr" + (",consolidated" if consolidated else "")
            url, extra = self.location(case.store, src, mode)
            argv, env = self.nc_argv(who, [self.ncbench, "open", url])
            return argv, dict(env, **extra), "self"
        if who == "D":
            argv = [self.zarr_py, os.path.join(ROOT, "bench", "zarr_python.py"), "open", src]
            return argv + (["consolidated"] if consolidated else []), self.base_env, "self"
        if who == "E":
            if consolidated:
                return "n/a (zarrs does not read .zmetadata)"
            if not os.path.exists(self.zarrs):
                return "n/a (zarrs program not built)"
            return [self.zarrs, "open", src], self.base_env, "self"
        return "n/a"


def workers():
    """Worker threads our library runs here: one per core this process may use."""
    return len(os.sched_getaffinity(0))


def chunk_count(case, size):
    """Chunks of the variable a read or write case moves."""
    shape, chunk = geometry(case.dtype, case.chunking, size)
    n = 1
    for s, c in zip(shape, chunk):
        n *= -(-s // c)
    return n


def start_s3s_fs(directory, environ):
    """Starts s3s-fs on a free loopback port serving `directory`/data (scripts/s3-server), with
    the bench bucket, in environment `environ`; stopped when the harness exits, also when it is
    killed. Its port."""
    import atexit
    port = free_port()
    script = os.path.join(ROOT, "scripts", "s3-server")
    environ = dict(environ, S3_SERVER_OWNER=str(os.getpid()))
    r = subprocess.run([script, "start", "s3s-fs", str(port), directory, S3_BUCKET],
                       env=environ, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"s3s-fs in {directory} did not start: {r.stderr.strip()}")
    atexit.register(subprocess.run, [script, "stop", directory])
    return port


def start_latency_proxy(port, link):
    """Starts bench/latency_proxy.py in front of the S3 server at `port`, with `link` as
    (latency in ms, MB/s per connection); stopped when the harness exits. Its port."""
    import atexit
    listen = free_port()
    latency, rate = link
    proxy = subprocess.Popen([sys.executable, os.path.join(ROOT, "bench", "latency_proxy.py"),
                              str(listen), str(port), str(latency), str(rate)])
    atexit.register(proxy.kill)
    import socket
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", listen), timeout=1).close()
            return listen
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("the latency proxy did not start")


def parse_link(text):
    """`MS,MBPS` (as given to --s3-link) as (latency ms, MB/s); None for no text."""
    if not text:
        return None
    latency, rate = text.split(",")
    return float(latency), float(rate)


def free_port():
    """A loopback TCP port nothing listens on now."""
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def store_unavailable(store):
    """Why a store cannot be benchmarked here (None: it can). S3 needs s3s-fs, which
    scripts/setup installs, to serve the datasets on loopback."""
    if store in ("file", "zip"):
        return None
    if store == "s3":
        return None if shutil.which("s3s-fs") else "n/a (s3s-fs not installed: run scripts/setup)"
    return f"n/a (unknown store {store})"


def log(msg):
    print(msg, file=sys.stderr, flush=True)


class Runner:
    """Runs children with wait4 so each run's peak RSS is known."""

    @staticmethod
    def run(argv, env, timed_by):
        t0 = time.perf_counter()
        # `cat` output goes to /dev/null, not through a pipe we would have to drain.
        sink = subprocess.DEVNULL if argv[0] == "cat" else subprocess.PIPE
        p = subprocess.Popen([str(a) for a in argv], env=env, stdout=sink,
                             stderr=subprocess.PIPE)
        # Drain pipes without reaping, then reap with wait4 for the rusage.
        out = p.stdout.read() if p.stdout else b""
        err = p.stderr.read()
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        code = p.returncode
        if code != 0:
            last = (err.decode(errors="replace").strip().splitlines() or [f"exit {code}"])[-1]
            raise RuntimeError(last[:160], code)
        cpu = ru.ru_utime + ru.ru_stime
        m = re.search(r"elapsed ([0-9.]+) checksum ([0-9a-f]+)", out.decode(errors="replace"))
        if timed_by == "self" and m:
            return float(m.group(1)), ru.ru_maxrss, m.group(2), cpu
        return wall, ru.ru_maxrss, "", cpu


def run_case(env, case, who, reps, warmup=0):
    """Times `reps` runs of a case after `warmup` untimed ones (first touches of memory the
    machine has not used for a while can cost several times a run). Writes are synced to disk
    after every run, untimed, so that one run's write-back does not land in the next."""
    r = Result(case, who)
    # Our library must run every case it is asked to: what is "not available" for another
    # contender is a failure for ours.
    unavailable = "error" if who in OURS else "n/a"
    try:
        how = env.argv(case, who)
    except RuntimeError as e:
        r.status = f"{unavailable} ({e.args[0]})"
        return r
    if isinstance(how, str):
        r.status = how
        return r
    writes = case.workload in ("write", "write1000")
    for i in range(warmup + reps):
        if writes and i > 0:
            how = env.argv(case, who)  # fresh destination every time
        argv, run_env, timed_by = how
        try:
            secs, rss, checksum, cpu = Runner.run(argv, run_env or env.base_env, timed_by)
            if writes:
                os.sync()
        except RuntimeError as e:
            reason, code = e.args[0], e.args[1] if len(e.args) > 1 else 1
            r.status = ("n/a" if code == 3 else "error") + f" ({reason})"
            r.times = []
            return r
        if case.workload == "write":
            wrong = written_codec_mismatch(env, case, who)
            if wrong:
                r.status, r.times = f"{unavailable} ({wrong})", []
                return r
        if i < warmup:
            continue
        r.times.append(secs)
        r.cpu.append(cpu)
        r.rss_kib = max(r.rss_kib, rss)
        r.checksum = checksum
    try:
        if case.store == "s3" and who in COUNTED:
            r.requests = count_requests(env, case, who)
        if who == "A" and case.workload not in ("open1000", "write1000") and r.times:
            shape, chunk = geometry(case.dtype, case.chunking, env.args.size)
            r.rss_bound = rss_bound.for_case(case.workload, shape, chunk, TYPES[case.dtype],
                                             env.open_rss_kib(case) / 1024, workers())
    except RuntimeError as e:
        r.status = f"{unavailable} (run after the timed ones: {e.args[0]})"
    return r


def count_requests(env, case, who):
    """Runs a case once more, untimed, through the counting S3 server: the requests it made."""
    port, log_path = env.s3_counting_server()
    how = env.argv(case, who)  # a write gets a fresh destination
    if isinstance(how, str):
        return None
    argv, run_env, timed_by = how
    old, new = f"127.0.0.1:{env.s3_timed_port}", f"127.0.0.1:{port}"
    argv = [str(a).replace(old, new) for a in argv]
    run_env = {k: v.replace(old, new) for k, v in (run_env or env.base_env).items()}
    start = os.path.getsize(log_path)
    Runner.run(argv, run_env, timed_by)
    with open(log_path, errors="replace") as f:
        f.seek(start)
        return s3_requests.count(f.read(), S3_BUCKET)


# What a variable's .zarray says for each codec we ask for (compressor id, filter ids).
EXPECTED_CODEC = {
    "none": (None, []),
    "zlib1": ("zlib", ["shuffle"]),
    "zstd3": ("zstd", []),
    "blosc-lz4": ("blosc", []),
}


def written_codec_mismatch(env, case, who):
    """Some libraries accept a codec request and silently store data uncompressed (Debian's
    4.9.0 returns success from nc_def_var_zstandard without zstd); such a write is not the
    case asked for. Returns the reason, or None when the stored metadata match."""
    where = env.write_location_of(case.store, who)[2]
    try:
        if isinstance(where, tuple):
            import zipfile
            with zipfile.ZipFile(where[0]) as z:
                meta = json.loads(z.read(where[1]))
        else:
            with open(where) as f:
                meta = json.load(f)
    except (OSError, ValueError, KeyError):
        return None
    comp = (meta.get("compressor") or {}).get("id")
    filters = [f.get("id") for f in (meta.get("filters") or [])]
    if (comp, filters) != EXPECTED_CODEC[case.codec]:
        return f"codec request ignored: stored compressor {comp}, filters {filters}"
    return None


def fmt_time(s):
    if s is None:
        return "-"
    return f"{s * 1000:.1f}ms" if s < 1 else f"{s:.2f}s"


def main():
    ap = argparse.ArgumentParser(prog="scripts/bench")
    ap.add_argument("--size", default="1G", help="bytes per variable: 1G, 256M, ...")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1, help="untimed runs before the timed ones")
    ap.add_argument("--quick", action="store_true", help="a smoke run of a few seconds")
    ap.add_argument("--only", help="regex over case names (workload/type/chunking/codec/store)")
    ap.add_argument("--contenders", default="A,A1,B,C,D,E,cat")
    ap.add_argument("--target", required=True)
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--zarr-python", required=True)
    ap.add_argument("--with-netcdf-410", default="")
    ap.add_argument("--no-plot", action="store_true")
    ap.add_argument("--s3-link", type=parse_link, default=None, metavar="MS,MBPS",
                    help="time S3 cases through bench/latency_proxy.py: MS of latency per "
                         "request, MBPS megabytes a second per connection (e.g. 20,80)")
    ap.add_argument("--references-without-ours", action="store_true",
                    help="also time the other contenders on cases our library cannot run")
    args = ap.parse_args()
    args.size = parse_size(args.size)
    if args.quick:
        args.size = min(args.size, 8 * MiB)
        args.reps = 1
        args.warmup = 0
    env = Env(args)
    who_all = [w for w in args.contenders.split(",") if w]
    results = []
    cases = build_cases(args)
    log(f"scripts/bench: {len(cases)} cases, size {args.size // MiB} MiB, {args.reps} reps")
    skipped = {}
    # The CSV is rewritten after every case, so a long run that is stopped keeps what it measured.
    stamp = datetime.datetime.now().strftime("%Y-%m-%d-%H%M%S")
    os.makedirs(args.out_dir, exist_ok=True)
    csv_path = os.path.join(args.out_dir, f"{stamp}.csv")
    log(f"scripts/bench: results so far in {csv_path}")
    for case in cases:
        why = store_unavailable(case.store)
        if why:
            skipped.setdefault(case.store, (why, []))[1].append(case)
            continue
        row = []
        for who in who_all:
            ours = row[0] if row and row[0].who == "A" else None
            if ours and not ours.times and not args.references_without_ours:
                r = Result(case, who, status="n/a (skipped: ours n/a)")
            else:
                r = run_case(env, case, who, args.reps, args.warmup)
            results.append(r)
            row.append(r)
        check_checksums(row)
        log(summary_line(case, row))
        write_csv(csv_path, results, args)
    write_csv(csv_path, results, args)
    table = render_table(results, who_all)
    for store, (why, skipped_cases) in skipped.items():
        table += f"\nnot run: {len(skipped_cases)} cases on the {store} store: {why}"
    report = "\n".join([table, render_requests(results, args.size), render_targets(results),
                        render_promises(results, args.size)])
    print(report)
    with open(os.path.join(args.out_dir, f"{stamp}.txt"), "w") as f:
        f.write(report + "\n")
    if not args.no_plot:
        png = os.path.join(args.out_dir, f"{stamp}.png")
        plot(results, png)
        print(f"plot: {png}")
    print(f"csv: {csv_path}")
    # A benchmark that runs but reads wrong values, or fails, must not look like a result.
    broken = [r for r in results if r.status.startswith("error") or "checksum" in r.status]
    for r in broken:
        print(f"FAILED: {r.case.name()} {LABEL[r.who]}: {r.status}", file=sys.stderr)
    for r in results:
        for _, wrong in request_failures(r, args.size):
            print(f"FAILED: {r.case.name()} {LABEL[r.who]}: {wrong}", file=sys.stderr)
            broken.append(r)
    return 1 if broken else 0


def parse_size(text):
    m = re.fullmatch(r"(\d+)([KMG]?)i?B?", text.strip(), re.I)
    if not m:
        raise SystemExit(f"bad --size {text}")
    mult = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(2).upper()]
    return int(m.group(1)) * mult


def check_checksums(row):
    """Readers of the same data must agree; a disagreeing contender is marked, not hidden."""
    sums = {r.who: r.checksum for r in row if r.checksum and r.times}
    if row and row[0].case.workload in ("read_all", "read_chunks", "read_strided", "read_series"):
        ref = sums.get("C") or sums.get("D") or sums.get("B")
        for r in row:
            if ref and r.checksum and r.checksum != ref:
                r.status = "ok (checksum differs)"


def summary_line(case, row):
    base = next((r for r in row if r.who == "A"), None)
    parts = []
    for r in row:
        m = r.median()
        if m is None:
            parts.append(f"{r.who}={r.status}")
        else:
            ratio = ""
            if base and base.median() and r.who != "A":
                ratio = f" ({m / base.median():.2f}x)"
            parts.append(f"{r.who}={fmt_time(m)}{ratio}")
    return f"{case.name():40s} " + "  ".join(parts)


def write_csv(path, results, args):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["case", "workload", "type", "chunking", "codec", "store", "extra", "contender",
                    "label", "median_s", "min_s", "runs", "peak_rss_mib", "process_cpu_s", "speedup_of_ours",
                    "status", "size_bytes", "chunks", "rss_bound_mib", "s3_requests",
                    "s3_whole_gets", "s3_ranged_gets", "s3_heads", "s3_chunk_gets",
                    "s3_distinct_chunks"])
        ours = {r.case.name(): r.median() for r in results if r.who == "A"}
        for r in results:
            m = r.median()
            a = ours.get(r.case.name())
            w.writerow([r.case.name(), r.case.workload, r.case.dtype, r.case.chunking,
                        r.case.codec, r.case.store, r.case.extra, r.who, LABEL[r.who],
                        f"{m:.6f}" if m is not None else "",
                        f"{min(r.times):.6f}" if r.times else "", len(r.times),
                        f"{r.rss_kib / 1024:.1f}" if r.times else "",
                        f"{statistics.median(r.cpu):.3f}" if r.cpu else "",
                        f"{m / a:.3f}" if (m and a) else "", r.status, args.size,
                        chunk_count(r.case, args.size) if r.case.dtype else "",
                        f"{r.rss_bound.total():.1f}" if r.rss_bound else ""]
                       + request_columns(r.requests))


def request_columns(q):
    if q is None:
        return [""] * 6
    return [q.summary(), q.whole_gets, q.ranged_gets, q.heads, q.chunk_gets,
            len(q.chunks_fetched)]


def render_table(results, who_all):
    by_case = {}
    for r in results:
        by_case.setdefault(r.case.name(), {})[r.who] = r
    head = ["case", "ours", "RSS"] + [f"{LABEL[w]} (x)" for w in who_all if w != "A"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, row in by_case.items():
        a = row.get("A")
        am = a.median() if a else None
        cells = [name, fmt_time(am) if am else (a.status if a else "-"),
                 f"{a.rss_kib / 1024:.0f}M" if a and a.times else "-"]
        for w in who_all:
            if w == "A":
                continue
            r = row.get(w)
            if r is None:
                cells.append("-")
            elif r.median() is None:
                cells.append(r.status)
            elif am:
                cells.append(f"{r.median() / am:.2f} ({fmt_time(r.median())}, "
                             f"{r.rss_kib / 1024:.0f}M)")
            else:
                cells.append(f"{fmt_time(r.median())}, {r.rss_kib / 1024:.0f}M")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


# Targets from the project's performance promise: (description, workload filter, reference,
# minimum speedup of ours over the reference). Evaluated on every matching case of the run.
# (description, workload, codecs, stores, reference contender, ratio needed)
TARGETS = [
    ("whole read, none/zstd/blosc, >= 4x nc-4.10.1", "read_all", ("none", "zstd3", "blosc-lz4"),
     tuple(STORES), "C", 4.0),
    ("whole read, none/zstd/blosc, >= 1.0x zarrs", "read_all", ("none", "zstd3", "blosc-lz4"),
     tuple(STORES), "E", 1.0),
    ("whole read zlib-1, >= 2x nc-4.10.1", "read_all", ("zlib1",), tuple(STORES), "C", 2.0),
    ("writes >= 3x nc-4.10.1", "write", tuple(CODECS), tuple(STORES), "C", 3.0),
    ("strided read >= 5x nc-4.10.1", "read_strided", tuple(CODECS), tuple(STORES), "C", 5.0),
    ("time-series read >= 3x nc-4.10.1", "read_series", tuple(CODECS), tuple(STORES), "C", 3.0),
    ("uncompressed whole read within 2x of cat", "read_all", ("none",), ("file",), "cat", 0.5),
    ("S3 whole read >= 70% of concurrent GETs (curl)", "read_all", tuple(CODECS), ("s3",), "cat",
     0.7),
    ("1000-variable open >= 5x nc-4.10.1", "open1000", ("",), tuple(STORES), "C", 5.0),
    ("1000 variables written one at a time >= 3x nc-4.10.1 (as writes)", "write1000", ("",),
     tuple(STORES), "C", 3.0),
]


# References that run on one core: only against them is A1's ratio a speed per core.
ONE_CORE_REFERENCES = ("B", "C")


def render_targets(results):
    """One line per target: how many cases meet it, the worst ratio and its case, and, when that
    case misses the target against a one-core reference and ours on one thread (A1) ran it, our
    speed per core there (the reference's fastest run over A1's fastest: one run slowed by the
    machine does not decide it) and the cores the target would need with ideal scaling."""
    idx = {(r.case.name(), r.who): r for r in results}
    lines = ["", "| target | cases | met | worst ratio | worst case | worst case per core (x), "
             "cores needed |", "|---|---|---|---|---|---|"]
    for desc, workload, codecs, stores, ref, need in TARGETS:
        ratios = []
        for r in results:
            c = r.case
            if (r.who != "A" or c.workload != workload or c.codec not in codecs
                    or c.store not in stores or not r.times):
                continue
            o = idx.get((c.name(), ref))
            if not (o and o.times):
                continue
            ratios.append((o.median() / r.median(), c.name()))
        if not ratios:
            lines.append(f"| {desc} | 0 | n/a | - | - | - |")
            continue
        met = sum(1 for q, _ in ratios if q >= need)
        worst = min(ratios)
        one = idx.get((worst[1], "A1"))
        needs = "-"
        if worst[0] < need and ref in ONE_CORE_REFERENCES and one and one.times:
            per_core = min(idx[(worst[1], ref)].times) / min(one.times)
            needs = f"{per_core:.2f}, {need / per_core:.1f}"
        lines.append(f"| {desc} | {len(ratios)} | {met}/{len(ratios)} | {worst[0]:.2f} | "
                     f"{worst[1]} | {needs} |")
    return "\n".join(lines)


def render_requests(results, size):
    """The S3 requests of every counted case: ours and curl's, beside the chunks it moves."""
    rows = {}
    for r in results:
        if r.requests is not None:
            rows.setdefault(r.case.name(), {})[r.who] = r
    if not rows:
        return ""
    lines = ["", "S3 requests, counted at the server in one more run of each case (untimed):",
             "", "| case | chunks | ours | curl |", "|---|---|---|---|"]
    for name, row in rows.items():
        case = next(iter(row.values())).case
        chunks = chunk_count(case, size) if case.dtype else "-"
        cells = [row[w].requests.summary() if w in row else "-" for w in ("A", "cat")]
        lines.append(f"| {name} | {chunks} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines)


def request_failures(r, size):
    """How a run of ours on S3 broke the request promises, as (promise, what happened) pairs:
    "head" (any HEAD request), "per-chunk" (a whole read not fetching each chunk object in
    exactly one whole GET), "consolidated" (a consolidated open making more than one GET)."""
    q, c = r.requests, r.case
    if q is None or r.who != "A":
        return []
    wrong = []
    if q.heads:
        wrong.append(("head", f"{q.heads} HEAD requests"))
    if c.workload == "read_all":
        n = chunk_count(c, size)
        if (q.chunk_gets, len(q.chunks_fetched)) != (n, n) or q.ranged_gets:
            wrong.append(("per-chunk", f"{q.chunk_gets} GETs of {len(q.chunks_fetched)} "
                          f"distinct chunk objects ({q.ranged_gets} ranged) for {n} chunks"))
    if c.workload == "open1000" and c.extra == "consolidated" and q.total() != 1:
        wrong.append(("consolidated", f"{q.total()} requests ({q.summary()})"))
    return wrong


def render_promises(results, size):
    """The targets that are not speed ratios: S3 requests and peak memory, case by case."""
    lines = ["", "| promise | cases | met | furthest from it |", "|---|---|---|---|"]
    checks = [
        ("S3 whole read: one GET per chunk", "per-chunk", lambda c: c.workload == "read_all"),
        ("S3 consolidated 1000-variable open: one GET", "consolidated",
         lambda c: c.workload == "open1000" and c.extra == "consolidated"),
        ("S3: no HEAD request in any case", "head", lambda c: True),
    ]
    for desc, promise, applies in checks:
        runs = [r for r in results if r.who == "A" and r.requests is not None and applies(r.case)]
        if not runs:
            lines.append(f"| {desc} | 0 | n/a | - |")
            continue
        bad = [(r, what) for r in runs for p, what in request_failures(r, size) if p == promise]
        worst = f"{bad[0][0].case.name()}: {bad[0][1]}" if bad else "-"
        lines.append(f"| {desc} | {len(runs)} | {len(runs) - len(bad)}/{len(runs)} | {worst} |")
    bounded = [r for r in results if r.rss_bound is not None and r.times]
    if bounded:
        over = [(r.rss_kib / 1024 - r.rss_bound.total(), r) for r in bounded]
        worst = max(over, key=lambda t: t[0])[1]
        met = sum(1 for e, _ in over if e <= 0)
        lines.append(f"| peak RSS <= opened + output + {rss_bound.CACHE_BOUND // MiB} MiB cache + "
                     f"{rss_bound.CHUNKS_PER_WORKER} chunks per worker ({workers()} workers) | "
                     f"{len(bounded)} | {met}/{len(bounded)} | {worst.case.name()}: "
                     f"{worst.rss_kib / 1024:.0f} MiB against {worst.rss_bound.explain()} |")
    return "\n".join(lines)


def plot(results, png):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ours = {r.case.name(): r for r in results if r.who == "A" and r.times}
    refs = ["B", "C", "D", "E"]
    names = [n for n in ours]
    if not names:
        return
    fig, ax = plt.subplots(figsize=(max(8, len(names) * 0.5), 6))
    width = 0.8 / len(refs)
    for k, who in enumerate(refs):
        vals = []
        for n in names:
            o = next((r for r in results if r.who == who and r.case.name() == n and r.times),
                     None)
            vals.append(o.median() / ours[n].median() if o else 0)
        ax.bar([i + k * width for i in range(len(names))], vals, width, label=LABEL[who])
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_ylabel("speedup of ours (reference time / our time)")
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(names))])
    ax.set_xticklabels(names, rotation=75, ha="right", fontsize=7)
    ax.legend()
    fig.tight_layout()
    fig.savefig(png, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
