//! The width of a string variable's decoded slots, and what widening it takes: for strings
//! stored as objects, dropping what was decoded at the old width; for fixed-width strings
//! (`|S<n>`, numpy unicode `<U<n>`, whose widths are whole code units as written) already
//! stored, rewriting every stored chunk at the new width, so that a string written later is
//! never cut. Widths grow at least twofold (but for the first write of
//! fixed-width strings, which takes the longest string's), so strings growing a little at a
//! time widen a few times only. Knows nothing of requests.

use super::{Geometry, StoreKey, StringStorage, batch_len};
use crate::api::dataset::Dataset;
use crate::chunk::cache::ChunkIndex;
use crate::error::{Error, Result};
use crate::model::{GroupId, NcType};
use crate::zmap::StorePrefix;

impl Dataset {
    /// Runs `f` with the variable's geometry; when a chunk holds strings longer than the
    /// variable's slots ([`Error::StringSlots`]), widens the slots and runs it again. Widths
    /// grow at least twofold and [`Dataset::widen_strings`] refuses slots past its bound, so
    /// this ends. When it ends in an error, slots of strings stored as objects go back to the
    /// width they had (one damaged or hostile chunk must not leave every later read of the
    /// variable with vast slots).
    pub(super) fn widening_slots<T>(
        &mut self,
        g: GroupId,
        v: usize,
        mut f: impl FnMut(&mut Self, Geometry) -> Result<T>,
    ) -> Result<T> {
        let width_before = self.tree.group(g).vars[v].maxstrlen;
        let done = loop {
            let geo = match self.geometry(g, v) {
                Ok(geo) => geo,
                Err(e) => break Err(e),
            };
            match f(self, geo) {
                Err(Error::StringSlots { width }) => {
                    if let Err(e) = self.widen_strings(g, v, width) {
                        break Err(e);
                    }
                }
                done => break done,
            }
        };
        if done.is_err() {
            self.narrow_object_slots(g, v, width_before);
        }
        done
    }

    /// Makes the strings of variable `v` at least `width` bytes wide (more than now; see the
    /// module doc for how much more). Its dirty chunks are stored first, at the old width,
    /// and its cached and read-ahead chunks dropped. Fixed-width strings already stored are
    /// rewritten at the new width and the array's metadata saved with them; when that fails
    /// before any chunk is stored again, nothing changes. Refused ([`Error::TooLarge`]) when
    /// one chunk's slots would take more than a quarter of the machine's memory.
    pub(in crate::api) fn widen_strings(
        &mut self,
        g: GroupId,
        v: usize,
        width: usize,
    ) -> Result<()> {
        let var = &self.tree.group(g).vars[v];
        let old_width = var.maxstrlen;
        if var.ty != NcType::String || width <= old_width {
            return Err(Error::Internal(format!(
                "the strings of {} cannot widen from {old_width} to {width}",
                var.name
            )));
        }
        let rewrite = var.strings != StringStorage::Objects && var.data_written;
        let width = if var.strings == StringStorage::Objects || rewrite {
            width.max(old_width.saturating_mul(2))
        } else {
            width
        };
        let elems = super::product(&var.chunks).unwrap_or(usize::MAX);
        if !slots_fit(elems.saturating_mul(var.string_slot(width))) {
            return Err(slots_too_large(&var.name, elems, width));
        }
        self.flush_var_chunks(g, v)?;
        self.caches.remove(&(g.0, v));
        self.stop_read_ahead(g, v);
        if !rewrite {
            self.tree.var_mut(g, v).maxstrlen = width;
            return Ok(());
        }
        let old = self.geometry(g, v)?;
        self.tree.var_mut(g, v).maxstrlen = width;
        let rewritten = match self.geometry(g, v) {
            Ok(new) => self.rewrite_wider(&old, &new),
            Err(e) => Err((e, false)),
        };
        match rewritten {
            Ok(()) => self.write_metadata(),
            Err((e, stored_some)) => {
                if stored_some {
                    // Some chunks are wider already: the metadata says so, and the chunks
                    // not rewritten fail to read (their size is wrong) instead of reading as
                    // other strings.
                    let _ = self.write_metadata();
                } else {
                    self.tree.var_mut(g, v).maxstrlen = old_width;
                }
                Err(e)
            }
        }
    }

    /// Gives the slots of variable `v`, when its strings are stored as objects, `width`
    /// bytes again: what they hold is stored first and dropped (left as they are if storing
    /// fails).
    fn narrow_object_slots(&mut self, g: GroupId, v: usize, width: usize) {
        let var = &self.tree.group(g).vars[v];
        if var.strings != StringStorage::Objects || var.maxstrlen == width {
            return;
        }
        if self.flush_var_chunks(g, v).is_err() {
            return;
        }
        self.caches.remove(&(g.0, v));
        self.stop_read_ahead(g, v);
        self.tree.var_mut(g, v).maxstrlen = width;
    }

    /// Stores every chunk stored at `old`'s width again at `new`'s, each string in a wider
    /// slot, in batches of bounded bytes. Every chunk is decoded once before any is stored
    /// again, so that a damaged one changes nothing; the error says whether some chunk was
    /// stored again.
    fn rewrite_wider(
        &self,
        old: &Geometry,
        new: &Geometry,
    ) -> std::result::Result<(), (Error, bool)> {
        let keys = self.stored_chunks(old).map_err(|e| (e, false))?;
        let batch = batch_len(new.chunk_bytes, self.store.is_local());
        for part in keys.chunks(batch) {
            self.wider_chunks(old, new, part).map_err(|e| (e, false))?;
        }
        let mut stored_some = false;
        for part in keys.chunks(batch) {
            let wider = self
                .wider_chunks(old, new, part)
                .map_err(|e| (e, stored_some))?;
            let chunks: Vec<(&ChunkIndex, &[u8])> =
                wider.iter().map(|(idx, s)| (idx, s.as_slice())).collect();
            // A batch is stored in parallel: some of it may be stored when it fails.
            stored_some = true;
            self.store_chunks(new, &chunks).map_err(|e| (e, true))?;
        }
        Ok(())
    }

    /// The stored chunks of the variable at `old`: their indices and keys.
    fn stored_chunks(&self, old: &Geometry) -> Result<Vec<(ChunkIndex, StoreKey)>> {
        let prefix = StorePrefix::new(&old.path)?;
        Ok(self
            .store
            .list_keys(&prefix)?
            .into_iter()
            .filter_map(|key| Some((chunk_index(old, &key)?, key)))
            .collect())
    }

    /// The stored chunks at `keys`, decoded at `old`'s width and widened to `new`'s.
    fn wider_chunks(
        &self,
        old: &Geometry,
        new: &Geometry,
        keys: &[(ChunkIndex, StoreKey)],
    ) -> Result<Vec<(ChunkIndex, Vec<u8>)>> {
        let names: Vec<StoreKey> = keys.iter().map(|(_, key)| key.clone()).collect();
        let mut wider = Vec::with_capacity(keys.len());
        for ((idx, key), bytes) in keys.iter().zip(self.store.get_many(&names)?) {
            let Some(bytes) = bytes else { continue };
            let decoded = Self::decode_chunk(old, key, bytes)?;
            let mut slots = vec![0u8; new.chunk_bytes];
            for (to, from) in slots
                .chunks_exact_mut(new.esize)
                .zip(decoded.chunks_exact(old.esize))
            {
                to[..from.len()].copy_from_slice(from);
            }
            wider.push((idx.clone(), slots));
        }
        Ok(wider)
    }
}

/// True when chunks of strings taking `chunk_bytes` in their slots may be decoded: every
/// worker holds a chunk's slots and its encoded bytes (about as large) at once, and all of
/// that must stay within a quarter of the machine's memory.
pub(super) fn slots_fit(chunk_bytes: usize) -> bool {
    let workers = rayon::current_num_threads().max(1);
    chunk_bytes
        .checked_mul(2 * workers)
        .is_some_and(|bytes| bytes as u64 <= crate::machine::memory_bytes() / 4)
}

/// The error of chunks of `elems` strings whose slots of `width` bytes would not fit.
pub(super) fn slots_too_large(var: &str, elems: usize, width: usize) -> Error {
    Error::TooLarge(format!(
        "variable {var}: chunks of {elems} strings of up to {width} bytes, decoded by every \
         worker at once, would take more than a quarter of this machine's memory"
    ))
}

/// The chunk index a stored key of the variable at `geo` names, when it names one (its
/// metadata objects and anything else below its path do not).
fn chunk_index(geo: &Geometry, key: &StoreKey) -> Option<ChunkIndex> {
    let name = key.as_str().strip_prefix(&geo.path)?.strip_prefix('/')?;
    let name = if geo.v3_keys {
        let rest = name.strip_prefix('c')?;
        rest.strip_prefix(geo.sep).unwrap_or(rest)
    } else {
        name
    };
    let idx: ChunkIndex = name
        .split(geo.sep)
        .map(|part| part.parse().ok())
        .collect::<Option<_>>()?;
    let rank = geo.chunks.len();
    (idx.len() == rank && geo.key(&idx).ok().as_ref() == Some(key)).then_some(idx)
}
