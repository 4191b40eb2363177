//! The store of a dataset created in this session: it started empty (`NC_CLOBBER` removed the
//! dataset that was there, `NC_NOCLOBBER` found nothing), so a key never written through this
//! view is absent, and reading it asks the store nothing.
//!
//! Owns the record of the keys written, each recorded before its write is tried (a write that
//! failed may still have landed), and the split of every read into keys the store is asked for
//! and keys known absent; a delete of keys never written asks nothing either (they are absent
//! already), and a key deleted is absent again. Listings and flushes go to the store as they
//! are. It knows nothing of what the objects hold. Worth it where every read is a round trip:
//! writing a new dataset in parts of chunks reads each chunk first (on S3, one GET per chunk,
//! each a 404).

use super::{EachObject, Produce, Runs, Store, StoreKey, StorePrefix, Tail};
use crate::error::Result;
use rayon::prelude::*;
use std::collections::HashSet;
use std::sync::{PoisonError, RwLock};

/// A [`Store`] that was empty when this view of it was made.
#[derive(Debug)]
pub struct CreatedStore {
    inner: Box<dyn Store>,
    written: RwLock<HashSet<StoreKey>>,
}

impl CreatedStore {
    /// A view of `inner`, which must hold nothing under its root.
    pub fn new(inner: Box<dyn Store>) -> CreatedStore {
        CreatedStore {
            inner,
            written: RwLock::new(HashSet::new()),
        }
    }

    fn record(&self, key: &StoreKey) {
        self.written
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key.clone());
    }

    fn was_written(&self, key: &StoreKey) -> bool {
        self.written
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(key)
    }

    /// The indices of `keys` written through this view (the others are absent).
    fn written_of(&self, keys: &[StoreKey]) -> Vec<usize> {
        let written = self.written.read().unwrap_or_else(PoisonError::into_inner);
        (0..keys.len())
            .filter(|&i| written.contains(&keys[i]))
            .collect()
    }
}

/// `keys` at `indices`.
fn picked(keys: &[StoreKey], indices: &[usize]) -> Vec<StoreKey> {
    indices.iter().map(|&i| keys[i].clone()).collect()
}

/// Answers for `count` keys: those at `indices` from `got` (in order), the rest `absent`.
fn spread<T: Clone>(count: usize, indices: &[usize], got: Vec<T>, absent: T) -> Vec<T> {
    let mut all = vec![absent; count];
    for (&i, answer) in indices.iter().zip(got) {
        all[i] = answer;
    }
    all
}

impl Store for CreatedStore {
    fn get(&self, key: &StoreKey) -> Result<Option<Vec<u8>>> {
        if !self.was_written(key) {
            return Ok(None);
        }
        self.inner.get(key)
    }

    fn get_many(&self, keys: &[StoreKey]) -> Result<Vec<Option<Vec<u8>>>> {
        let asked = self.written_of(keys);
        let got = self.inner.get_many(&picked(keys, &asked))?;
        Ok(spread(keys.len(), &asked, got, None))
    }

    fn get_each(&self, keys: &[StoreKey], held: usize, each: &EachObject<'_>) -> Result<()> {
        let asked = self.written_of(keys);
        let mut absent = vec![true; keys.len()];
        for &i in &asked {
            absent[i] = false;
        }
        (0..keys.len())
            .into_par_iter()
            .filter(|&i| absent[i])
            .try_for_each(|i| each(i, None))?;
        self.inner
            .get_each(&picked(keys, &asked), held, &|j, value| {
                each(asked[j], value)
            })
    }

    fn get_many_into(
        &self,
        keys: &[StoreKey],
        outs: &mut [&mut [u8]],
    ) -> Result<Vec<Option<usize>>> {
        let asked = self.written_of(keys);
        let mut wanted = asked.iter().peekable();
        let mut their_outs: Vec<&mut [u8]> = Vec::with_capacity(asked.len());
        for (i, out) in outs.iter_mut().enumerate() {
            if wanted.next_if(|&&w| w == i).is_some() {
                their_outs.push(&mut **out);
            }
        }
        let got = self
            .inner
            .get_many_into(&picked(keys, &asked), &mut their_outs)?;
        Ok(spread(keys.len(), &asked, got, None))
    }

    fn get_runs_into(&self, key: &StoreKey, runs: &mut [(u64, &mut [u8])]) -> Result<Option<u64>> {
        if !self.was_written(key) {
            return Ok(None);
        }
        self.inner.get_runs_into(key, runs)
    }

    fn get_runs_many(&self, keys: &[StoreKey], runs: &mut [Runs<'_>]) -> Result<Vec<Option<u64>>> {
        let asked = self.written_of(keys);
        let mut their_runs: Vec<Runs<'_>> = asked
            .iter()
            .map(|&i| std::mem::take(&mut runs[i]))
            .collect();
        let got = self
            .inner
            .get_runs_many(&picked(keys, &asked), &mut their_runs);
        for (&i, r) in asked.iter().zip(their_runs) {
            runs[i] = r;
        }
        Ok(spread(keys.len(), &asked, got?, None))
    }

    fn get_tails_many(&self, keys: &[StoreKey], n: usize) -> Result<Vec<Option<Tail>>> {
        let asked = self.written_of(keys);
        let got = self.inner.get_tails_many(&picked(keys, &asked), n)?;
        Ok(spread(keys.len(), &asked, got, None))
    }

    fn get_into(&self, key: &StoreKey, buf: &mut Vec<u8>) -> Result<bool> {
        if !self.was_written(key) {
            return Ok(false);
        }
        self.inner.get_into(key, buf)
    }

    fn reads_runs_in_place(&self, key: &StoreKey) -> bool {
        self.inner.reads_runs_in_place(key)
    }

    fn is_local(&self) -> bool {
        self.inner.is_local()
    }

    fn allow_objects_up_to(&self, bytes: u64) {
        self.inner.allow_objects_up_to(bytes);
    }

    fn put(&self, key: &StoreKey, value: &[u8]) -> Result<()> {
        self.record(key);
        self.inner.put(key, value)
    }

    fn put_many(&self, items: Vec<(StoreKey, Vec<u8>)>) -> Result<()> {
        for (key, _) in &items {
            self.record(key);
        }
        self.inner.put_many(items)
    }

    fn put_streamed(&self, held: usize, produce: &Produce<'_>) -> Result<()> {
        self.inner.put_streamed(held, &|put| {
            produce(&|key, value| {
                self.record(key);
                put(key, value)
            })
        })
    }

    /// A key never written here is absent already: nothing is asked of the store.
    fn delete(&self, key: &StoreKey) -> Result<()> {
        self.delete_many(std::slice::from_ref(key))
    }

    fn delete_many(&self, keys: &[StoreKey]) -> Result<()> {
        let asked = self.written_of(keys);
        let written = picked(keys, &asked);
        if written.is_empty() {
            return Ok(());
        }
        self.inner.delete_many(&written)?;
        let mut record = self.written.write().unwrap_or_else(PoisonError::into_inner);
        for key in &written {
            record.remove(key);
        }
        Ok(())
    }

    fn delete_prefix(&self, prefix: &StorePrefix) -> Result<()> {
        self.inner.delete_prefix(prefix)
    }

    fn list_children(&self, prefix: &StorePrefix) -> Result<Vec<String>> {
        self.inner.list_children(prefix)
    }

    fn list_keys(&self, prefix: &StorePrefix) -> Result<Vec<StoreKey>> {
        self.inner.list_keys(prefix)
    }

    fn flush(&self) -> Result<()> {
        self.inner.flush()
    }

    fn discard(&self) -> Result<()> {
        self.inner.discard()
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zmap::memory::MemoryStore;

    fn key(s: &str) -> StoreKey {
        StoreKey::new(s).unwrap()
    }

    /// An object that was in the store before the view was made is never asked for (the view
    /// trusts that it started empty); every object written through it reads back by every
    /// read, beside absent ones, each in its place.
    #[test]
    fn only_what_was_written_here_is_read_from_the_store() {
        let inner = MemoryStore::new();
        inner.put(&key("before"), b"old").unwrap();
        let view = CreatedStore::new(Box::new(inner));
        assert_eq!(view.get(&key("before")).unwrap(), None);
        view.put(&key("a/1"), b"one").unwrap();
        view.put_many(vec![(key("a/3"), b"three".to_vec())])
            .unwrap();
        view.put_streamed(2, &|put| put(&key("a/5"), b"five".to_vec()))
            .unwrap();
        let keys: Vec<StoreKey> = ["a/0", "a/1", "before", "a/3", "a/4", "a/5"]
            .iter()
            .map(|k| key(k))
            .collect();
        let want = [
            None,
            Some(&b"one"[..]),
            None,
            Some(b"three"),
            None,
            Some(b"five"),
        ];

        let got = view.get_many(&keys).unwrap();
        assert_eq!(got.iter().map(|v| v.as_deref()).collect::<Vec<_>>(), want);

        let handed = std::sync::Mutex::new(vec![None; keys.len()]);
        view.get_each(&keys, 2, &|i, v| {
            let mut h = handed.lock().unwrap();
            assert!(h[i].is_none(), "key {i} handed out twice");
            h[i] = Some(v);
            Ok(())
        })
        .unwrap();
        let handed: Vec<Option<Vec<u8>>> =
            handed.into_inner().unwrap().into_iter().flatten().collect();
        assert_eq!(
            handed.iter().map(|v| v.as_deref()).collect::<Vec<_>>(),
            want
        );

        let mut bufs = vec![vec![b'.'; 5]; keys.len()];
        let mut outs: Vec<&mut [u8]> = bufs.iter_mut().map(|b| &mut b[..]).collect();
        let lens = view.get_many_into(&keys, &mut outs).unwrap();
        assert_eq!(lens, [None, Some(3), None, Some(5), None, Some(4)]);
        assert_eq!(bufs[1], b"one..");
        assert_eq!(bufs[3], b"three");
        assert_eq!(bufs[5], b"five.");
        assert_eq!(bufs[2], b".....", "an object from before is not read");

        let mut parts = vec![[0u8; 2]; keys.len()];
        let mut runs: Vec<Runs<'_>> = parts.iter_mut().map(|p| vec![(1, &mut p[..])]).collect();
        let lens = view.get_runs_many(&keys, &mut runs).unwrap();
        assert_eq!(lens, [None, Some(3), None, Some(5), None, Some(4)]);
        drop(runs);
        assert_eq!([parts[1], parts[3], parts[5]], [*b"ne", *b"hr", *b"iv"]);

        let mut buf = vec![1, 2, 3];
        assert!(!view.get_into(&key("before"), &mut buf).unwrap());
        assert!(view.get_into(&key("a/5"), &mut buf).unwrap());
        assert_eq!(buf, b"five");
        assert_eq!(view.get(&key("a/4")).unwrap(), None);
        // Deleted: read from the store again, which says it is gone.
        view.delete(&key("a/1")).unwrap();
        assert_eq!(view.get(&key("a/1")).unwrap(), None);
    }

    /// Deleting keys never written asks the store nothing; a key deleted is absent again, and
    /// reading it asks nothing either.
    #[test]
    fn deletes_of_keys_never_written_ask_nothing() {
        /// A memory store that notes the reads and deletes asked of it.
        #[derive(Debug, Default)]
        struct Asked {
            inner: MemoryStore,
            asked: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
        }
        impl Store for Asked {
            fn get(&self, key: &StoreKey) -> Result<Option<Vec<u8>>> {
                self.asked.lock().unwrap().push(format!("get {key}"));
                self.inner.get(key)
            }
            fn put(&self, key: &StoreKey, value: &[u8]) -> Result<()> {
                self.inner.put(key, value)
            }
            fn delete(&self, key: &StoreKey) -> Result<()> {
                self.asked.lock().unwrap().push(format!("delete {key}"));
                self.inner.delete(key)
            }
            fn delete_prefix(&self, prefix: &StorePrefix) -> Result<()> {
                self.inner.delete_prefix(prefix)
            }
            fn list_children(&self, prefix: &StorePrefix) -> Result<Vec<String>> {
                self.inner.list_children(prefix)
            }
            fn list_keys(&self, prefix: &StorePrefix) -> Result<Vec<StoreKey>> {
                self.inner.list_keys(prefix)
            }
            fn describe(&self) -> String {
                "asked".into()
            }
        }
        let store = Asked::default();
        let asked = std::sync::Arc::clone(&store.asked);
        let view = CreatedStore::new(Box::new(store));
        view.put(&key("a/0"), b"zero").unwrap();
        view.delete(&key("a/1")).unwrap();
        view.delete_many(&[key("a/0"), key("a/2")]).unwrap();
        assert_eq!(view.get(&key("a/0")).unwrap(), None);
        assert_eq!(*asked.lock().unwrap(), ["delete a/0"]);
        assert_eq!(view.list_keys(&StorePrefix::root()).unwrap(), []);
    }

    /// A write that fails may still have landed: its key is read from the store from then on.
    #[test]
    fn a_failed_write_still_counts_as_written() {
        #[derive(Debug)]
        struct Refuses(MemoryStore);
        impl Store for Refuses {
            fn get(&self, key: &StoreKey) -> Result<Option<Vec<u8>>> {
                self.0.get(key)
            }
            fn put(&self, key: &StoreKey, value: &[u8]) -> Result<()> {
                self.0.put(key, value)?;
                Err(crate::error::Error::Internal("the answer was lost".into()))
            }
            fn delete(&self, key: &StoreKey) -> Result<()> {
                self.0.delete(key)
            }
            fn delete_prefix(&self, prefix: &StorePrefix) -> Result<()> {
                self.0.delete_prefix(prefix)
            }
            fn list_children(&self, prefix: &StorePrefix) -> Result<Vec<String>> {
                self.0.list_children(prefix)
            }
            fn list_keys(&self, prefix: &StorePrefix) -> Result<Vec<StoreKey>> {
                self.0.list_keys(prefix)
            }
            fn describe(&self) -> String {
                "refuses".into()
            }
        }
        let view = CreatedStore::new(Box::new(Refuses(MemoryStore::new())));
        assert!(view.put(&key("k"), b"landed").is_err());
        assert_eq!(
            view.get(&key("k")).unwrap().as_deref(),
            Some(&b"landed"[..])
        );
    }
}
