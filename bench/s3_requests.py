"""Requests a client made of the loopback S3 server, counted at the server.

A second s3s-fs serves the same bucket directory with its request log on (`RUST_LOG` at debug
for `s3s::service`, one `req: Request { method: .., uri: .., headers: {..} }` line per request).
Each S3 case runs once more against it, untimed, and the lines that run added are counted by
kind here. This module knows the log's line format and S3's request shapes; it knows nothing of
the cases, the contenders or how they are run.
"""

import re
from dataclasses import dataclass, field

# One request as s3s logs it when it arrives (before it is answered or refused).
REQUEST_LINE = re.compile(
    r"req: Request \{ method: (?P<method>[A-Z]+), uri: (?P<uri>\S+), version: [^,]+, "
    r"headers: \{(?P<headers>.*)\}, body: ")
# A Zarr v2 chunk key: its last path segment is chunk indices joined by "." (or a lone index).
CHUNK_KEY = re.compile(r"/\d+(\.\d+)*$")


@dataclass
class Requests:
    """What one run asked of the server, by kind."""
    whole_gets: int = 0
    ranged_gets: int = 0
    lists: int = 0
    heads: int = 0
    puts: int = 0
    posts: int = 0
    deletes: int = 0
    other: int = 0
    # Chunk objects fetched (whole or ranged), with repeats, and how many distinct ones.
    chunk_gets: int = 0
    chunks_fetched: set = field(default_factory=set)

    def total(self):
        return (self.whole_gets + self.ranged_gets + self.lists + self.heads + self.puts
                + self.posts + self.deletes + self.other)

    def summary(self):
        """A short line for tables: only the kinds that occurred, GETs always."""
        parts = [f"GET {self.whole_gets}"]
        if self.ranged_gets:
            parts.append(f"ranged GET {self.ranged_gets}")
        for name, n in (("LIST", self.lists), ("HEAD", self.heads), ("PUT", self.puts),
                        ("POST", self.posts), ("DELETE", self.deletes), ("other", self.other)):
            if n:
                parts.append(f"{name} {n}")
        if self.chunk_gets:
            parts.append(f"chunk objects {self.chunk_gets} ({len(self.chunks_fetched)} distinct)")
        return ", ".join(parts)


def count(log_text, bucket):
    """Counts the requests in `log_text` (the lines one run added to the server's log)."""
    seen = Requests()
    for m in REQUEST_LINE.finditer(log_text):
        method, uri, headers = m.group("method"), m.group("uri"), m.group("headers")
        path, _, query = uri.partition("?")
        key = path.removeprefix(f"/{bucket}").lstrip("/")
        if method == "GET" and (not key or "list-type=" in query):
            seen.lists += 1
        elif method == "GET":
            if '"range":' in headers:
                seen.ranged_gets += 1
            else:
                seen.whole_gets += 1
            if CHUNK_KEY.search(path):
                seen.chunk_gets += 1
                seen.chunks_fetched.add(key)
        elif method == "HEAD":
            seen.heads += 1
        elif method == "PUT":
            seen.puts += 1
        elif method == "POST":
            seen.posts += 1
        elif method == "DELETE":
            seen.deletes += 1
        else:
            seen.other += 1
    return seen
