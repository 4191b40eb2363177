//! Read-ahead for a variable read chunk after chunk: when a request starts at the chunk that
//! follows, in C order, the last chunk of the previous request, the chunks after this request
//! are fetched and decoded in the background, in parallel, while the caller works on what it
//! got; the next request that wants any of them waits for that work and takes its chunks.
//! A loop of `nc_get_vara` over chunks (what `nccopy` does) then decodes on every core instead
//! of one chunk at a time on the caller's thread, and, from a store with latency, has the next
//! chunks' requests in flight together instead of one round trip per request.
//!
//! Owns the detection of sequential requests, which chunks come next, and the background work
//! and its hand-over. What fetching and decoding a chunk means is the caller's (a function
//! given to [`ReadAhead::after`], or a job fetching them all given to
//! [`ReadAhead::after_fetching`]), and so is where the chunks go (the chunk cache). Only
//! datasets nobody writes through use it: a chunk decoded ahead can never be stale.
//!
//! Work nobody waits for any more (the sequence moved elsewhere, read-ahead stopped, the
//! dataset was closed) is told so ([`Wanted`]) and stops early; a fetch that failed is the
//! answer of the request that wants a chunk it left unanswered, instead of that request
//! fetching the chunk again (from a server that stalls, waiting a second time for the timeout).

use crate::chunk::cache::ChunkIndex;
use crate::error::Error;
use rayon::prelude::*;
use std::collections::HashSet;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Condvar, Mutex, PoisonError, Weak};

/// Spare buffers, at most `most` of them.
#[derive(Default, Debug)]
struct Spares {
    buffers: Vec<Vec<u8>>,
    most: usize,
}

impl Spares {
    /// Keeps `buffer` when fewer than the most are kept; frees it otherwise.
    fn keep(&mut self, buffer: Vec<u8>) {
        if self.buffers.len() < self.most {
            self.buffers.push(buffer);
        }
    }
}

/// The buffers a job reads and decodes into: spare ones when there are, given back when done.
#[derive(Clone, Debug)]
pub(crate) struct Buffers(Arc<Mutex<Spares>>);

impl Buffers {
    /// A spare buffer (empty when none is kept).
    pub(crate) fn spare(&self) -> Vec<u8> {
        let mut s = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        s.buffers.pop().unwrap_or_default()
    }

    /// Gives `buffer` back for later jobs (freed when enough are kept).
    pub(crate) fn keep(&self, buffer: Vec<u8>) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .keep(buffer);
    }
}

/// One chunk a job decoded: its index, the bytes it was stored in, and its decoded bytes.
pub(crate) type Decoded = (ChunkIndex, usize, Vec<u8>);

/// What a fetching job gives back: the chunks it decoded and, when its fetch failed, why and
/// the chunks it got no answer for (absent and undecodable chunks were answered).
#[derive(Default, Debug)]
pub(crate) struct Fetched {
    pub(crate) decoded: Vec<Decoded>,
    pub(crate) failed: Option<(Error, Vec<ChunkIndex>)>,
}

/// Whether the read-ahead still waits for a job's chunks; a job asks as it goes, and stops
/// once nobody does.
#[derive(Clone, Debug)]
pub(crate) struct Wanted(Weak<()>);

impl Wanted {
    pub(crate) fn still(&self) -> bool {
        self.0.strong_count() > 0
    }
}

/// What a request gets from the work done ahead: the chunks, and the failure of the fetch
/// that left a chunk it wants without an answer.
#[derive(Default, Debug)]
pub(crate) struct Handed {
    pub(crate) chunks: Vec<(ChunkIndex, Vec<u8>)>,
    pub(crate) failure: Option<Error>,
}

/// Where a job runs: on the pool (its chunks read one per pool thread), or on a thread of its
/// own (it waits on a store with latency for all of them, and has them decoded on the pool as
/// they arrive; a pool thread waiting on the network would stop decoding).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RunsOn {
    Pool,
    OwnThread,
}

/// What a background job hands over: `None` until it is done.
type Handover = Arc<(Mutex<Option<Done>>, Condvar)>;

/// A finished job: its decoded chunks, the bytes they were stored in and decoded to, and how
/// its fetch failed.
#[derive(Default, Debug)]
struct Done {
    chunks: Vec<(ChunkIndex, Vec<u8>)>,
    stored: usize,
    decoded: usize,
    failed: Option<(Error, Vec<ChunkIndex>)>,
}

/// Work under way: its chunks, where it hands them over, and the interest the job checks
/// ([`Wanted`]): dropping this tells the job nobody waits for it.
#[derive(Debug)]
struct Pending {
    chunks: Vec<ChunkIndex>,
    handover: Handover,
    _interest: Arc<()>,
}

/// One variable's read-ahead state.
#[derive(Default, Debug)]
pub(crate) struct ReadAhead {
    /// The chunk after the last chunk of the previous request.
    expected: Option<ChunkIndex>,
    /// The last chunk decoded ahead (or being decoded) in this sequence.
    ahead_last: Option<ChunkIndex>,
    /// The background job under way.
    pending: Option<Pending>,
    /// How the last job's fetch failed, and the chunks it left unanswered.
    failed: Option<(Error, Vec<ChunkIndex>)>,
    /// Buffers for jobs to read and decode into (chunk buffers the cache let go of): a chunk
    /// decoded into a fresh buffer costs its pages' faults, as much as decoding a fast codec.
    /// Shared with the jobs, which give their read buffers back.
    spares: Arc<Mutex<Spares>>,
    /// Chunks handed over (into the chunk cache) that no request has read whole since.
    unread: HashSet<ChunkIndex>,
    /// The most chunks a job decodes (the latest depth asked for).
    depth: usize,
    /// Whether the chunks decoded ahead were stored nearly as large as they decode to.
    stored_nearly_raw: bool,
}

/// Stored bytes per decoded byte from which chunks count as stored nearly raw (a compressor
/// that could not shrink them keeps them in raw blocks, which decode at the speed of a copy).
const NEARLY_RAW: (usize, usize) = (9, 10);

/// The fewest chunks remembered as handed over and not read whole; at least twice a job's
/// chunks are. Past that, all are forgotten (they stay in the chunk cache until evicted): a
/// reader that leaves so many unread does not read them whole.
const UNREAD_REMEMBERED: usize = 64;

impl ReadAhead {
    /// The chunks decoded ahead when the request for `wanted` chunks wants any of them
    /// (waiting for the job to finish), and the failure of a finished job's fetch when it
    /// left one of `wanted` unanswered (once: a later request tries again); nothing
    /// otherwise, and the work stays for a later request.
    pub(crate) fn take(&mut self, wanted: &[ChunkIndex]) -> Handed {
        let chunks = self.take_pending(wanted);
        let failure = match &self.failed {
            Some((_, unanswered)) if wanted.iter().any(|w| unanswered.contains(w)) => {
                self.failed.take().map(|(e, _)| e)
            }
            _ => None,
        };
        Handed { chunks, failure }
    }

    /// The chunks of the job under way when `wanted` wants any of them, once it is done; its
    /// failure is kept for the requests that want what it left unanswered.
    fn take_pending(&mut self, wanted: &[ChunkIndex]) -> Vec<(ChunkIndex, Vec<u8>)> {
        let Some(pending) = &self.pending else {
            return Vec::new();
        };
        if !wanted.iter().any(|w| pending.chunks.contains(w)) {
            return Vec::new();
        }
        // Still wanted while this waits.
        let Some(pending) = self.pending.take() else {
            return Vec::new();
        };
        let (slot, done) = &*pending.handover;
        let mut ready = slot.lock().unwrap_or_else(PoisonError::into_inner);
        while ready.is_none() {
            ready = done.wait(ready).unwrap_or_else(PoisonError::into_inner);
        }
        let done = ready.take().unwrap_or_default();
        if done.decoded > 0
            && done.stored.saturating_mul(NEARLY_RAW.1) >= done.decoded.saturating_mul(NEARLY_RAW.0)
        {
            self.stored_nearly_raw = true;
        }
        self.failed = done.failed;
        let ready = done.chunks;
        if self.unread.len() + ready.len() > UNREAD_REMEMBERED.max(2 * self.depth) {
            self.unread.clear();
        }
        self.unread.extend(ready.iter().map(|(idx, _)| idx.clone()));
        ready
    }

    /// True once the chunks decoded ahead turned out to be stored nearly as large as they
    /// decode to (and so decode about as fast as they are copied).
    pub(crate) fn stored_nearly_raw(&self) -> bool {
        self.stored_nearly_raw
    }

    /// Stops decoding ahead: work under way is abandoned and the buffers kept for it are let
    /// go of (none are kept from now on); what was learnt about the chunks stays, and so do
    /// the chunks handed over and not yet read whole.
    pub(crate) fn stop(&mut self) {
        self.pending = None;
        self.failed = None;
        self.ahead_last = None;
        let mut spares = self.spares.lock().unwrap_or_else(PoisonError::into_inner);
        spares.most = 0;
        spares.buffers.clear();
    }

    /// Whether chunk `idx` was handed over and not read whole since; a request reading it
    /// whole calls this, and from then on it does not count as handed over.
    pub(crate) fn read_whole(&mut self, idx: &[u64]) -> bool {
        self.unread.remove(idx)
    }

    /// Keeps `buffers` for the next jobs to decode into, as many as they can use.
    pub(crate) fn recycle(&self, buffers: Vec<Vec<u8>>) {
        let mut spares = self.spares.lock().unwrap_or_else(PoisonError::into_inner);
        for b in buffers {
            spares.keep(b);
        }
    }

    /// Records a request for chunks `first..=last` (C order) of a variable with `grid` chunks
    /// along each dimension. When it started where the previous one ended and no work is
    /// under way, starts decoding in the background, with `decode`, the `ahead` chunks that
    /// follow both this request and what was decoded ahead already. `decode(chunk, stored,
    /// out)` reads the chunk into `stored` and decodes it into `out` (both reused buffers)
    /// and gives `out` back, or `None` for a chunk that is absent or does not decode (the
    /// request that wants it reads it itself and reports what is wrong). A sequence that
    /// starts elsewhere abandons work under way.
    pub(crate) fn after<F>(
        &mut self,
        first: &[u64],
        last: &[u64],
        grid: &[u64],
        ahead: usize,
        decode: F,
    ) where
        F: Fn(&ChunkIndex, &mut Vec<u8>, Vec<u8>) -> Option<Vec<u8>> + Send + Sync + 'static,
    {
        let job = move |chunks: Vec<ChunkIndex>, buffers: &Buffers, wanted: &Wanted| {
            let decoded = chunks
                .into_par_iter()
                .filter_map(|idx| {
                    if !wanted.still() {
                        return None;
                    }
                    let mut stored = buffers.spare();
                    let decoded = decode(&idx, &mut stored, buffers.spare());
                    let stored_len = stored.len();
                    buffers.keep(stored);
                    decoded.map(|data| (idx, stored_len, data))
                })
                .collect();
            Fetched {
                decoded,
                failed: None,
            }
        };
        self.start_after(first, last, grid, ahead, RunsOn::Pool, job);
    }

    /// As [`ReadAhead::after`], for a store with latency: `job(chunks, buffers, wanted)`
    /// fetches all the chunks at once and decodes them (into `buffers`' spares), on a thread
    /// of its own, stops once nobody is `wanted` any more, and gives back those it decoded
    /// (absent or undecodable ones are left out, for the request that wants them to read
    /// itself) and how its fetch failed.
    pub(crate) fn after_fetching<J>(
        &mut self,
        first: &[u64],
        last: &[u64],
        grid: &[u64],
        ahead: usize,
        job: J,
    ) where
        J: FnOnce(Vec<ChunkIndex>, &Buffers, &Wanted) -> Fetched + Send + 'static,
    {
        self.start_after(first, last, grid, ahead, RunsOn::OwnThread, job);
    }

    /// The sequence detection of [`ReadAhead::after`], then `job` started where `runs_on`
    /// says.
    fn start_after<J>(
        &mut self,
        first: &[u64],
        last: &[u64],
        grid: &[u64],
        ahead: usize,
        runs_on: RunsOn,
        job: J,
    ) where
        J: FnOnce(Vec<ChunkIndex>, &Buffers, &Wanted) -> Fetched + Send + 'static,
    {
        let sequential = self.expected.as_deref() == Some(first);
        let next = next_chunk(last, grid);
        if !sequential && next == self.expected {
            // More of the chunk the previous request ended in (rows of it, say): the sequence
            // goes on.
            return;
        }
        self.expected = next;
        if !sequential {
            // No sequence: its buffers are freed, and a chunk its fetch failed on is fetched
            // again by the request that wants it.
            self.ahead_last = None;
            self.failed = None;
            self.spares
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .buffers
                .clear();
            return;
        }
        if let Some(pending) = &self.pending {
            if self
                .expected
                .as_ref()
                .is_some_and(|e| pending.chunks.last().is_some_and(|l| e <= l))
            {
                return;
            }
            // The sequence moved past the work under way: it is of no use any more.
            self.pending = None;
            self.ahead_last = None;
        }
        // After what was decoded ahead already, when the sequence has not reached it.
        let mut at = match (&self.expected, &self.ahead_last) {
            (Some(e), Some(a)) if a >= e => next_chunk(a, grid),
            (e, _) => e.clone(),
        };
        let mut chunks = Vec::with_capacity(ahead);
        while chunks.len() < ahead {
            let Some(idx) = at.take() else { break };
            at = next_chunk(&idx, grid);
            chunks.push(idx);
        }
        let Some(last) = chunks.last() else {
            return;
        };
        self.ahead_last = Some(last.clone());
        self.depth = ahead;
        // The buffers of one job: its decoded chunks and a read buffer per thread.
        self.spares
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .most = ahead + rayon::current_num_threads();
        let handover: Handover = Arc::default();
        let interest = Arc::new(());
        let wanted = Wanted(Arc::downgrade(&interest));
        self.pending = Some(Pending {
            chunks: chunks.clone(),
            handover: handover.clone(),
            _interest: interest,
        });
        let buffers = Buffers(Arc::clone(&self.spares));
        let hand_over = Arc::clone(&handover);
        let work = move || {
            // A panic must not abort the host program: it hands over nothing instead.
            let decoded = std::panic::catch_unwind(AssertUnwindSafe(|| {
                let fetched = job(chunks, &buffers, &wanted);
                let mut done = Done {
                    failed: fetched.failed,
                    ..Done::default()
                };
                for (idx, stored, data) in fetched.decoded {
                    done.stored += stored;
                    done.decoded += data.len();
                    done.chunks.push((idx, data));
                }
                done
            }))
            .unwrap_or_default();
            finish(&hand_over, decoded);
        };
        match runs_on {
            RunsOn::Pool => rayon::spawn(work),
            RunsOn::OwnThread => {
                let started = std::thread::Builder::new()
                    .name("nczarr-read-ahead".into())
                    .spawn(work);
                if started.is_err() {
                    // No thread to be had: nothing is handed over, and the requests read
                    // their chunks themselves.
                    finish(&handover, Done::default());
                }
            }
        }
    }
}

/// Hands a job's chunks over to the request waiting for them.
fn finish(handover: &Handover, decoded: Done) {
    let (slot, done) = &**handover;
    *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(decoded);
    done.notify_all();
}

/// The chunk after `idx` in C order within a grid of `grid` chunks per dimension; `None` after
/// the last one.
fn next_chunk(idx: &[u64], grid: &[u64]) -> Option<ChunkIndex> {
    let mut next = idx.to_vec();
    for d in (0..next.len()).rev() {
        next[d] += 1;
        if next[d] < grid[d] {
            return Some(next);
        }
        next[d] = 0;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_follow_in_c_order_and_end_with_the_grid() {
        assert_eq!(next_chunk(&[0, 2], &[2, 3]), Some(vec![1, 0]));
        assert_eq!(next_chunk(&[0, 1], &[2, 3]), Some(vec![0, 2]));
        assert_eq!(next_chunk(&[1, 2], &[2, 3]), None);
        assert_eq!(next_chunk(&[], &[]), None);
    }

    /// Work starts only once a request continues the previous one, covers the chunks after
    /// it (and after what was decoded ahead already), and is handed over to the first request
    /// that wants it; a sequence that starts elsewhere abandons it.
    #[test]
    fn sequential_requests_get_the_next_chunks_decoded_ahead() {
        let grid = [3u64, 2];
        let decoded = Arc::new(Mutex::new(Vec::new()));
        let log = decoded.clone();
        let decode = move |idx: &ChunkIndex, _: &mut Vec<u8>, _: Vec<u8>| {
            log.lock().unwrap().push(idx.clone());
            // Chunk (2, 1) is absent.
            (idx[..] != [2, 1]).then(|| vec![idx[0] as u8, idx[1] as u8])
        };
        let mut ra = ReadAhead::default();
        ra.after(&[0, 0], &[0, 0], &grid, 2, decode.clone());
        assert!(ra.pending.is_none(), "one request is no sequence");
        ra.after(&[0, 1], &[0, 1], &grid, 2, decode.clone());
        // A request that wants none of the work leaves it for later.
        assert!(ra.take(&[vec![0, 1]]).chunks.is_empty());
        let got = ra.take(&[vec![1, 0]]).chunks;
        assert_eq!(
            got,
            vec![(vec![1, 0], vec![1, 0]), (vec![1, 1], vec![1, 1])]
        );
        // Chunk (1, 0) was decoded ahead: the next work starts after (1, 1), also when the
        // request was read in parts (rows) first.
        ra.after(&[1, 0], &[1, 0], &grid, 2, decode.clone());
        assert!(ra.take(&[vec![1, 0]]).chunks.is_empty());
        ra.after(&[1, 0], &[1, 0], &grid, 2, decode.clone());
        assert_eq!(
            ra.take(&[vec![2, 0]]).chunks,
            vec![(vec![2, 0], vec![2, 0])]
        );
        let mut asked = decoded.lock().unwrap().clone();
        asked.sort();
        assert_eq!(asked, [vec![1, 0], vec![1, 1], vec![2, 0], vec![2, 1]]);
        // The last chunk: nothing comes after it.
        ra.after(&[1, 1], &[2, 1], &grid, 4, decode.clone());
        assert!(ra.pending.is_none());
        // A sequence elsewhere abandons the work under way and starts its own.
        let mut ra = ReadAhead::default();
        ra.after(&[0, 0], &[0, 0], &grid, 1, decode.clone());
        ra.after(&[0, 1], &[0, 1], &grid, 1, decode.clone());
        ra.after(&[2, 0], &[2, 0], &grid, 1, decode.clone());
        ra.after(&[2, 1], &[2, 1], &grid, 1, decode.clone());
        assert!(ra.pending.is_none());
        ra.after(&[1, 0], &[1, 0], &grid, 1, decode.clone());
        ra.after(&[1, 1], &[1, 1], &grid, 1, decode);
        assert_eq!(
            ra.take(&[vec![2, 0]]).chunks,
            vec![(vec![2, 0], vec![2, 0])]
        );
    }

    /// Chunks handed over count as unread until one request reads them whole (once), what
    /// was never handed over does not count, and only the latest [`UNREAD_REMEMBERED`] are
    /// remembered.
    #[test]
    fn handed_over_chunks_are_unread_until_read_whole() {
        let decode = |idx: &ChunkIndex, _: &mut Vec<u8>, _: Vec<u8>| Some(vec![idx[0] as u8]);
        let mut ra = ReadAhead::default();
        ra.after(&[0], &[0], &[8], 2, decode);
        ra.after(&[1], &[1], &[8], 2, decode);
        assert!(!ra.read_whole(&[2]), "not handed over yet");
        assert_eq!(ra.take(&[vec![2]]).chunks.len(), 2);
        assert!(ra.read_whole(&[3]));
        assert!(!ra.read_whole(&[3]), "read whole once");
        assert!(ra.read_whole(&[2]));
        assert!(!ra.read_whole(&[1]));
        ra.unread = (0..UNREAD_REMEMBERED as u64 - 1)
            .map(|i| vec![100 + i])
            .collect();
        ra.after(&[2], &[2], &[8], 2, decode);
        assert_eq!(ra.take(&[vec![5]]).chunks.len(), 2);
        assert_eq!(ra.unread.len(), 2, "too many unread: all forgotten");
        assert!(ra.read_whole(&[4]) && ra.read_whole(&[5]));
        assert!(!ra.read_whole(&[100]));
        // Jobs of many chunks are remembered whole.
        let mut ra = ReadAhead::default();
        ra.after(&[0], &[0], &[300], 100, decode);
        ra.after(&[1], &[1], &[300], 100, decode);
        assert_eq!(ra.take(&[vec![2]]).chunks.len(), 100);
        assert!((2..102).all(|c| ra.read_whole(&[c])));
    }

    /// Chunks handed over that were stored nearly as large as they decode to are found out
    /// (absent ones do not count); stopping lets go of the work and its buffers and keeps
    /// the finding.
    #[test]
    fn chunks_stored_nearly_raw_are_found_out() {
        for (stored_len, raw) in [(95usize, true), (90, true), (89, false), (10, false)] {
            let decode = move |idx: &ChunkIndex, stored: &mut Vec<u8>, _: Vec<u8>| {
                stored.resize(stored_len, 0);
                (idx[0] != 3).then(|| vec![0u8; 100])
            };
            let mut ra = ReadAhead::default();
            ra.after(&[0], &[0], &[8], 2, decode);
            ra.after(&[1], &[1], &[8], 2, decode);
            assert!(!ra.stored_nearly_raw());
            assert_eq!(ra.take(&[vec![2]]).chunks.len(), 1, "chunk 3 is absent");
            assert_eq!(ra.stored_nearly_raw(), raw, "{stored_len} of 100 bytes");
            ra.after(&[2], &[2], &[8], 2, decode);
            let job = ra
                .pending
                .as_ref()
                .expect("a job under way")
                .handover
                .clone();
            ra.stop();
            assert!(ra.pending.is_none());
            assert!(ra.spares.lock().unwrap().buffers.is_empty());
            ra.recycle(vec![vec![0u8; 100]]);
            // The job abandoned gives its read buffers back, and they are not kept either.
            let (slot, done) = &*job;
            let mut finished = slot.lock().unwrap();
            while finished.is_none() {
                finished = done.wait(finished).unwrap();
            }
            drop(finished);
            assert!(
                ra.spares.lock().unwrap().buffers.is_empty(),
                "no buffers kept once stopped"
            );
            assert!(
                ra.read_whole(&[2]),
                "what was handed over can still be let go of"
            );
            assert_eq!(ra.stored_nearly_raw(), raw);
        }
    }

    /// Requests for more of the chunk the previous one ended in (rows of it) keep the
    /// sequence: no chunk is decoded ahead twice.
    #[test]
    fn rows_of_one_chunk_keep_the_sequence() {
        let decoded = Arc::new(Mutex::new(Vec::new()));
        let log = decoded.clone();
        let decode = move |idx: &ChunkIndex, _: &mut Vec<u8>, _: Vec<u8>| {
            log.lock().unwrap().push(idx[0]);
            Some(vec![idx[0] as u8])
        };
        let mut ra = ReadAhead::default();
        for c in 0..8u64 {
            for _row in 0..3 {
                ra.take(&[vec![c]]);
                ra.after(&[c], &[c], &[8], 2, decode.clone());
            }
        }
        let mut asked = decoded.lock().unwrap().clone();
        asked.sort_unstable();
        assert_eq!(asked, (2..8).collect::<Vec<_>>());
    }

    /// A decoder that panics hands over nothing, and the waiting request goes on.
    #[test]
    fn a_panicking_decoder_hands_over_nothing() {
        let mut ra = ReadAhead::default();
        let decode = |_: &ChunkIndex, _: &mut Vec<u8>, _: Vec<u8>| -> Option<Vec<u8>> {
            panic!("decoder failed")
        };
        ra.after(&[0], &[0], &[4], 2, decode);
        ra.after(&[1], &[1], &[4], 2, decode);
        assert!(ra.take(&[vec![2]]).chunks.is_empty());
    }

    /// A fetch that failed is the answer, once, of the first request that wants a chunk it
    /// left unanswered, whether that request waited for the job or came later; chunks it
    /// answered are handed over, and a new sequence forgets the failure.
    #[test]
    fn a_failed_fetch_answers_the_request_for_what_it_left_unanswered() {
        let job = |chunks: Vec<ChunkIndex>, _: &Buffers, _: &Wanted| -> Fetched {
            let (answered, unanswered): (Vec<_>, Vec<_>) =
                chunks.into_iter().partition(|idx| idx[0] != 4);
            Fetched {
                decoded: answered
                    .into_iter()
                    .map(|idx| (idx.clone(), 1, vec![idx[0] as u8]))
                    .collect(),
                failed: Some((Error::Internal("stalled".into()), unanswered)),
            }
        };
        let mut ra = ReadAhead::default();
        ra.after_fetching(&[0], &[0], &[8], 4, job);
        ra.after_fetching(&[1], &[1], &[8], 4, job);
        let handed = ra.take(&[vec![2]]);
        assert_eq!(handed.chunks.len(), 3, "chunks 2, 3 and 5");
        assert!(handed.failure.is_none(), "chunk 2 was answered");
        assert!(ra.take(&[vec![3]]).failure.is_none());
        let handed = ra.take(&[vec![4], vec![5]]);
        assert!(
            matches!(handed.failure, Some(Error::Internal(ref m)) if m == "stalled"),
            "{handed:?}"
        );
        assert!(ra.take(&[vec![4]]).failure.is_none(), "reported once");

        let mut ra = ReadAhead::default();
        ra.after_fetching(&[0], &[0], &[8], 4, job);
        ra.after_fetching(&[1], &[1], &[8], 4, job);
        let handed = ra.take(&[vec![4]]);
        assert_eq!(handed.chunks.len(), 3);
        assert!(handed.failure.is_some(), "the request waiting for the job");

        let mut ra = ReadAhead::default();
        ra.after_fetching(&[0], &[0], &[8], 4, job);
        ra.after_fetching(&[1], &[1], &[8], 4, job);
        assert_eq!(ra.take(&[vec![2]]).chunks.len(), 3);
        ra.after_fetching(&[6], &[6], &[8], 4, job);
        assert!(ra.take(&[vec![4]]).failure.is_none(), "another sequence");
    }

    /// Work the read-ahead lets go of (a sequence elsewhere, stopping, the dataset closed) is
    /// told nobody waits for it; work a request waits for is wanted until handed over.
    #[test]
    fn work_nobody_waits_for_is_told_so() {
        let until_unwanted = |_: Vec<ChunkIndex>, _: &Buffers, wanted: &Wanted| -> Fetched {
            let start = std::time::Instant::now();
            while wanted.still() && start.elapsed() < std::time::Duration::from_secs(20) {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            let seen = if wanted.still() { 1 } else { 0 };
            Fetched {
                decoded: vec![(vec![2], 1, vec![seen])],
                failed: None,
            }
        };
        type LetGo = fn(&mut Option<ReadAhead>);
        let ways: [(&str, LetGo); 3] = [
            ("stopped", |ra| ra.as_mut().unwrap().stop()),
            ("moved elsewhere", |ra| {
                let ra = ra.as_mut().unwrap();
                let other = |_: Vec<ChunkIndex>, _: &Buffers, _: &Wanted| Fetched::default();
                ra.after_fetching(&[5], &[5], &[8], 1, other);
                ra.after_fetching(&[6], &[6], &[8], 1, other);
            }),
            ("closed", |ra| *ra = None),
        ];
        for (how, let_go) in ways {
            let mut ra = Some(ReadAhead::default());
            let r = ra.as_mut().unwrap();
            r.after_fetching(&[0], &[0], &[8], 1, until_unwanted);
            r.after_fetching(&[1], &[1], &[8], 1, until_unwanted);
            let job = r.pending.as_ref().unwrap().handover.clone();
            let_go(&mut ra);
            let (slot, done) = &*job;
            let started = std::time::Instant::now();
            let mut finished = slot.lock().unwrap();
            while finished.is_none() {
                finished = done.wait(finished).unwrap();
            }
            assert_eq!(finished.as_ref().unwrap().chunks[0].1, [0], "{how}");
            assert!(
                started.elapsed() < std::time::Duration::from_secs(10),
                "{how}"
            );
        }
    }

    /// A job fetching all its chunks at once runs on a thread of its own, not on the pool
    /// (where waiting on a store would stop a decoding thread), gets the chunks that follow
    /// the sequence, and hands over what it gives back; one that panics hands over nothing.
    #[test]
    fn a_fetching_job_runs_off_the_pool_and_hands_its_chunks_over() {
        let mut ra = ReadAhead::default();
        let job = |chunks: Vec<ChunkIndex>, buffers: &Buffers, _: &Wanted| -> Fetched {
            assert!(rayon::current_thread_index().is_none(), "on a pool thread");
            let mut out = buffers.spare();
            out.push(chunks.len() as u8);
            let decoded = chunks
                .into_iter()
                .map(|idx| (idx.clone(), 1, vec![idx[0] as u8, out[0]]))
                .collect();
            Fetched {
                decoded,
                failed: None,
            }
        };
        ra.after_fetching(&[0], &[0], &[8], 3, job);
        assert!(ra.pending.is_none(), "one request is no sequence");
        ra.after_fetching(&[1], &[1], &[8], 3, job);
        let got = ra.take(&[vec![3]]).chunks;
        assert_eq!(
            got,
            vec![
                (vec![2], vec![2, 3]),
                (vec![3], vec![3, 3]),
                (vec![4], vec![4, 3])
            ]
        );
        assert!(ra.read_whole(&[4]));

        let mut ra = ReadAhead::default();
        let panics =
            |_: Vec<ChunkIndex>, _: &Buffers, _: &Wanted| -> Fetched { panic!("fetch failed") };
        ra.after_fetching(&[0], &[0], &[4], 2, panics);
        ra.after_fetching(&[1], &[1], &[4], 2, panics);
        assert!(ra.take(&[vec![2]]).chunks.is_empty());
    }
}
