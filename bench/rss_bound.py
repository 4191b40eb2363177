"""The peak memory the project promises for a case: the output buffer, plus the chunk cache's
bound, plus a few chunks per worker thread, over what the process holds once the dataset is open.

This module owns that arithmetic and the numbers in it (the cache's default bound, how many
chunks "a few" is); it knows nothing of how cases are run or where their RSS comes from.
"""

from dataclasses import dataclass
from math import ceil, prod

MiB = 1 << 20
# The chunk cache's default bound (nc_set_chunk_cache's default size, 64 MiB).
CACHE_BOUND = 64 * MiB
# "A few chunks per worker thread": decoded, encoded and in flight.
CHUNKS_PER_WORKER = 4


@dataclass
class Bound:
    """The bound of one case, in MiB, with its parts."""
    opened: float
    output: float
    cache: float
    chunks: float

    def total(self):
        return self.opened + self.output + self.cache + self.chunks

    def explain(self):
        return (f"{self.opened:.0f} open + {self.output:.0f} output + {self.cache:.0f} cache + "
                f"{self.chunks:.0f} chunks = {self.total():.0f} MiB")


def output_bytes(workload, shape, chunk, esize):
    """Bytes of the caller's buffer: what `bench/c/ncbench.c` allocates for the workload (the
    values to write, for a write)."""
    if workload in ("read_all", "write"):
        return prod(shape) * esize
    if workload == "read_strided":  # every 4th element of the two fastest dimensions
        return prod(shape[:-2]) * ceil(shape[-2] / 4) * ceil(shape[-1] / 4) * esize
    if workload == "read_series":
        return shape[0] * esize
    if workload == "read_chunks":
        return prod(chunk) * esize
    raise ValueError(f"no output buffer known for {workload}")


def for_case(workload, shape, chunk, esize, opened_mib, workers):
    """The bound of a case, given the peak RSS (MiB) of opening its dataset and the number of
    worker threads."""
    return Bound(
        opened=opened_mib,
        output=output_bytes(workload, shape, chunk, esize) / MiB,
        cache=CACHE_BOUND / MiB,
        chunks=CHUNKS_PER_WORKER * workers * prod(chunk) * esize / MiB,
    )
