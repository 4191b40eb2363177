//! The width of a string variable's decoded slots, and what widening it takes: for strings
//! stored as objects, dropping what was decoded at the old width; for fixed-width strings
//! (`|S<n>`) already stored, rewriting every stored chunk at the new width, so that a string
//! written later is never cut. Knows nothing of requests.

use super::{Geometry, StoreKey, StringStorage};
use crate::api::dataset::Dataset;
use crate::chunk::cache::ChunkIndex;
use crate::error::{Error, Result};
use crate::model::{GroupId, NcType};
use crate::zmap::StorePrefix;

/// Stored chunks decoded, widened and stored again at a time while a variable widens.
const REWRITE_BATCH: usize = 64;

impl Dataset {
    /// Runs `f` with the variable's geometry; when a chunk holds strings longer than the
    /// variable's slots ([`Error::StringSlots`]), widens the slots and runs it again. Widths
    /// only grow, and [`Dataset::geometry`] refuses slots larger than memory, so this ends.
    pub(super) fn widening_slots<T>(
        &mut self,
        g: GroupId,
        v: usize,
        mut f: impl FnMut(&mut Self, Geometry) -> Result<T>,
    ) -> Result<T> {
        loop {
            let geo = self.geometry(g, v)?;
            match f(self, geo) {
                Err(Error::StringSlots { width }) => self.widen_strings(g, v, width)?,
                done => return done,
            }
        }
    }

    /// Makes the strings of variable `v` `width` bytes wide (more than now). Its dirty chunks
    /// are stored first, at the old width, and its cached and read-ahead chunks dropped. Fixed
    /// -width strings already stored are rewritten at the new width and the array's metadata
    /// saved with it; should that fail part way, the chunks not yet rewritten no longer match
    /// the metadata, and reading them fails with [`Error::ChunkSize`] rather than returning
    /// other strings.
    pub(super) fn widen_strings(&mut self, g: GroupId, v: usize, width: usize) -> Result<()> {
        let var = &self.tree.group(g).vars[v];
        if var.ty != NcType::String || var.strings == StringStorage::Ucs4 || width <= var.maxstrlen
        {
            return Err(Error::Internal(format!(
                "the strings of {} cannot widen from {} to {width}",
                var.name, var.maxstrlen
            )));
        }
        let rewrite = var.strings == StringStorage::Bytes && var.data_written;
        let old_width = var.maxstrlen;
        self.flush_var_chunks(g, v)?;
        self.caches.remove(&(g.0, v));
        self.stop_read_ahead(g, v);
        let old = if rewrite {
            Some(self.geometry(g, v)?)
        } else {
            None
        };
        self.tree.group_mut(g).vars[v].maxstrlen = width;
        let Some(old) = old else {
            return Ok(());
        };
        let new = match self.geometry(g, v) {
            Ok(new) => new,
            Err(e) => {
                self.tree.group_mut(g).vars[v].maxstrlen = old_width;
                return Err(e);
            }
        };
        self.rewrite_wider(&old, &new)?;
        self.write_metadata()
    }

    /// Stores every chunk stored at `old`'s width again at `new`'s, each string in a wider
    /// slot, in batches.
    fn rewrite_wider(&self, old: &Geometry, new: &Geometry) -> Result<()> {
        let prefix = StorePrefix::new(&old.path)?;
        let stored: Vec<(ChunkIndex, StoreKey)> = self
            .store
            .list_keys(&prefix)?
            .into_iter()
            .filter_map(|key| Some((chunk_index(old, &key)?, key)))
            .collect();
        for batch in stored.chunks(REWRITE_BATCH) {
            let keys: Vec<StoreKey> = batch.iter().map(|(_, key)| key.clone()).collect();
            let mut wider = Vec::with_capacity(batch.len());
            for ((idx, key), bytes) in batch.iter().zip(self.store.get_many(&keys)?) {
                let Some(bytes) = bytes else { continue };
                let decoded = Self::decode_chunk(old, key, bytes)?;
                let mut slots = vec![0u8; new.chunk_bytes];
                for (to, from) in slots
                    .chunks_exact_mut(new.esize)
                    .zip(decoded.chunks_exact(old.esize))
                {
                    to[..from.len()].copy_from_slice(from);
                }
                wider.push((idx, slots));
            }
            let chunks: Vec<(&ChunkIndex, &[u8])> =
                wider.iter().map(|(idx, s)| (*idx, s.as_slice())).collect();
            self.store_chunks(new, &chunks)?;
        }
        Ok(())
    }
}

/// The chunk index a stored key of the variable at `geo` names, when it names one (its
/// metadata objects and anything else below its path do not).
fn chunk_index(geo: &Geometry, key: &StoreKey) -> Option<ChunkIndex> {
    let name = key.as_str().strip_prefix(&geo.path)?.strip_prefix('/')?;
    let idx: ChunkIndex = name
        .split(geo.sep)
        .map(|part| part.parse().ok())
        .collect::<Option<_>>()?;
    let rank = geo.chunks.len();
    (idx.len() == rank && geo.key(&idx).ok().as_ref() == Some(key)).then_some(idx)
}
