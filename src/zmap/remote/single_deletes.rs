//! Deletes for services without S3's bulk delete: telling a refused bulk request from other
//! failures, remembering for the rest of the process which buckets refused one, and the
//! client that deletes one object a request, built only once a service needs it. Knows
//! nothing of stores, keys or datasets.

use crate::error::{Error, Result};
use object_store::ObjectStore;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// Builds a client of the service that deletes each object with a request of its own.
pub type MakeClient = Box<dyn Fn() -> Result<Arc<dyn ObjectStore>> + Send + Sync>;

/// The buckets (each with its endpoint) that refused a bulk delete in this process.
static REFUSING_BUCKETS: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// Why a bulk delete failed when the service answered it 404.
pub const BULK_DELETE_NOT_FOUND: &str = "the bulk delete request was answered 404 (Not Found)";

/// How one store deletes where its service refuses bulk deletes.
pub struct SingleDeletes {
    /// The bucket and its endpoint, by which refusals are remembered.
    bucket: String,
    /// Every delete goes one object a request.
    refused: AtomicBool,
    make: MakeClient,
    client: Mutex<Option<Arc<dyn ObjectStore>>>,
}

impl SingleDeletes {
    /// For a store in `bucket` (named with its endpoint), which deletes one object a request
    /// from the start when `known_refusing` or when the bucket refused a bulk delete before in
    /// this process; `make` builds the client for those deletes when the first is made.
    pub fn new(bucket: String, known_refusing: bool, make: MakeClient) -> SingleDeletes {
        let remembered = REFUSING_BUCKETS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(&bucket);
        SingleDeletes {
            bucket,
            refused: AtomicBool::new(known_refusing || remembered),
            make,
            client: Mutex::new(None),
        }
    }

    /// Whether deletes go one object a request.
    pub fn in_use(&self) -> bool {
        self.refused.load(Ordering::Relaxed)
    }

    /// Records that the service refused a bulk delete: this store and any store of the same
    /// bucket opened later in the process delete one object a request.
    pub fn remember_refusal(&self) {
        self.refused.store(true, Ordering::Relaxed);
        REFUSING_BUCKETS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(self.bucket.clone());
    }

    /// The client that deletes one object a request, built at the first ask.
    pub fn client(&self) -> Result<Arc<dyn ObjectStore>> {
        let mut client = self.client.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(built) = client.as_ref() {
            return Ok(Arc::clone(built));
        }
        let built = (self.make)()?;
        *client = Some(Arc::clone(&built));
        Ok(built)
    }
}

impl std::fmt::Debug for SingleDeletes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SingleDeletes")
            .field("bucket", &self.bucket)
            .field("refused", &self.in_use())
            .finish_non_exhaustive()
    }
}

/// True when a bulk delete failed because the service does not serve such requests (S3's
/// `NotImplemented`, a method not allowed, a checksum header it does not know, or the request
/// answered 404).
pub fn refuses_bulk_delete(e: &Error) -> bool {
    let Error::Remote { why, .. } = e else {
        return false;
    };
    [
        "status code: 501",
        "status code: 405",
        "<Code>NotImplemented</Code>",
        "<Code>MethodNotAllowed</Code>",
        "<Code>MissingContentMD5</Code>",
        // Google Cloud Storage's answer, at another endpoint than the one `gs3://` names.
        "Cannot create buckets using a POST",
        BULK_DELETE_NOT_FOUND,
    ]
    .iter()
    .any(|sign| why.contains(sign))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    fn counting_maker(built: &Arc<AtomicUsize>) -> MakeClient {
        let built = Arc::clone(built);
        Box::new(move || {
            built.fetch_add(1, Ordering::Relaxed);
            Ok(Arc::new(object_store::memory::InMemory::new()))
        })
    }

    #[test]
    fn the_client_is_built_once_and_only_when_asked_for() {
        let built = Arc::new(AtomicUsize::new(0));
        let deletes = SingleDeletes::new("unit:built".into(), false, counting_maker(&built));
        assert_eq!(built.load(Ordering::Relaxed), 0);
        let first = deletes.client().unwrap();
        let second = deletes.client().unwrap();
        assert!(Arc::ptr_eq(&first, &second));
        assert_eq!(built.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn a_refusal_is_remembered_for_the_bucket_only() {
        let built = Arc::new(AtomicUsize::new(0));
        let first = SingleDeletes::new("unit:refusing".into(), false, counting_maker(&built));
        assert!(!first.in_use());
        first.remember_refusal();
        assert!(first.in_use());
        let again = SingleDeletes::new("unit:refusing".into(), false, counting_maker(&built));
        assert!(again.in_use());
        let other = SingleDeletes::new("unit:other".into(), false, counting_maker(&built));
        assert!(!other.in_use());
        let known = SingleDeletes::new("unit:known".into(), true, counting_maker(&built));
        assert!(known.in_use());
    }
}
