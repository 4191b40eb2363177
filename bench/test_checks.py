"""The benchmark's own checks, against a real s3s-fs: the request counter reads the server's log
right, and the request promises fail the runs that break them.

Run by scripts/test: python -m unittest discover -s bench -p 'test_*.py'
"""

import os
import shutil
import subprocess
import tempfile
import unittest

import harness
import s3_requests

AUTH = ["--aws-sigv4", "aws:amz:us-east-1:s3",
        "--user", f"{harness.S3_ACCESS}:{harness.S3_SECRET}",
        "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD"]


@unittest.skipUnless(shutil.which("s3s-fs") and shutil.which("curl"), "needs s3s-fs and curl")
class RequestsCountedAtTheServer(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="bench-checks-")
        cls.port = harness.start_s3s_fs(cls.dir, dict(os.environ, RUST_LOG="s3s::service=debug"))
        cls.log = os.path.join(cls.dir, "server.log")
        for name in ("v/.zarray", "v/0.0", "v/0.1"):
            cls.curl("-X", "PUT", "--data-binary", name, cls.url(name))

    @classmethod
    def tearDownClass(cls):
        subprocess.run([os.path.join(harness.ROOT, "scripts", "s3-server"), "stop", cls.dir])
        shutil.rmtree(cls.dir, ignore_errors=True)

    @classmethod
    def url(cls, key):
        return f"http://127.0.0.1:{cls.port}/{harness.S3_BUCKET}/{key}"

    @classmethod
    def curl(cls, *args):
        subprocess.run(["curl", "--silent", "--fail", "-o", "/dev/null", *AUTH, *args],
                       check=True)

    def counted(self, *requests):
        """The requests the server logged while `requests` (curl argument lists) ran."""
        start = os.path.getsize(self.log)
        for args in requests:
            self.curl(*args)
        with open(self.log) as f:
            f.seek(start)
            return s3_requests.count(f.read(), harness.S3_BUCKET)

    def test_the_simulated_link_delays_each_request_and_passes_bytes_unchanged(self):
        import time
        proxy = harness.start_latency_proxy(self.port, (150, 80))
        through = f"http://127.0.0.1:{proxy}/{harness.S3_BUCKET}/v/0.0"
        started = time.monotonic()
        body = subprocess.run(["curl", "--silent", "--fail", *AUTH, through],
                              check=True, capture_output=True).stdout
        self.assertEqual(body, b"v/0.0")
        self.assertGreaterEqual(time.monotonic() - started, 0.15)

    def test_every_kind_is_counted_apart(self):
        q = self.counted([self.url("v/.zarray")], [self.url("v/0.0")], [self.url("v/0.0")],
                         ["-r", "0-1", self.url("v/0.1")], ["-I", self.url("v/0.1")],
                         [f"http://127.0.0.1:{self.port}/{harness.S3_BUCKET}?list-type=2&prefix=v"],
                         ["-X", "PUT", "--data-binary", "x", self.url("w/0")])
        self.assertEqual((q.whole_gets, q.ranged_gets, q.heads, q.lists, q.puts),
                         (3, 1, 1, 1, 1))
        self.assertEqual(q.chunk_gets, 3)
        self.assertEqual(q.chunks_fetched, {"v/0.0", "v/0.1"})
        self.assertEqual(q.total(), 7)

    def whole_read(self, q):
        case = harness.Case("read_all", "float", "small", "none", "s3")
        size = 2 * 4 * 256 * 256  # two chunks of (1, 256, 256) float32
        self.assertEqual(harness.chunk_count(case, size), 2)
        return harness.request_failures(harness.Result(case, "A", requests=q), size)

    def test_a_whole_read_passes_only_with_one_get_per_chunk_and_no_head(self):
        once = [[self.url("v/.zarray")], [self.url("v/0.0")], [self.url("v/0.1")]]
        self.assertEqual(self.whole_read(self.counted(*once)), [])
        twice = self.whole_read(self.counted(*once, [self.url("v/0.1")]))
        self.assertEqual([p for p, _ in twice], ["per-chunk"])
        ranged = self.whole_read(self.counted(once[0], once[1], ["-r", "0-1", self.url("v/0.1")]))
        self.assertEqual([p for p, _ in ranged], ["per-chunk"])
        head = self.whole_read(self.counted(*once, ["-I", self.url("v/0.0")]))
        self.assertEqual([p for p, _ in head], ["head"])

    def test_a_consolidated_open_passes_only_with_one_request(self):
        case = harness.Case("open1000", store="s3", extra="consolidated")
        for requests, broken in ((1, []), (2, ["consolidated"])):
            q = self.counted(*[[self.url("v/.zarray")]] * requests)
            failures = harness.request_failures(harness.Result(case, "A", requests=q), 0)
            self.assertEqual([p for p, _ in failures], broken)


if __name__ == "__main__":
    unittest.main()
