//! Keys from a source that hands out temporary ones (a command, a sign-on portal), kept until
//! shortly before they expire and then fetched again.
//!
//! Owns the keeping: keys are used until five minutes before their expiration (ten seconds,
//! for keys that come with less than five minutes left), keys without one for good, and one
//! fetch at a time. The source owns the fetching. It knows nothing of
//! stores, profiles or where keys come from.

use async_trait::async_trait;
use object_store::CredentialProvider;
use object_store::aws::AwsCredential;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::Mutex;

/// Keys are fetched again once they are this close to expiring.
pub const RENEW_BEFORE: Duration = Duration::from_secs(300);

/// Keys that come with less than [`RENEW_BEFORE`] left (a helper handing out cached keys near
/// their end) are kept until this close to expiring, not fetched again for every request.
pub const RENEW_LATE_BEFORE: Duration = Duration::from_secs(10);

/// Keys as a source gives them.
pub struct Fetched {
    pub credential: AwsCredential,
    /// When they stop working (`None`: never).
    pub expires: Option<SystemTime>,
}

/// A source of temporary keys.
#[async_trait]
pub trait Fetch: Send + Sync + 'static {
    /// Fresh keys; the error says why there are none, for messages.
    async fn fetch(&self) -> Result<Fetched, String>;

    /// The source, in messages ("credential_process `x`").
    fn describe(&self) -> String;
}

/// Keys in use, and when to fetch new ones (`None`: never).
struct Held {
    credential: Arc<AwsCredential>,
    renew_at: Option<Instant>,
}

/// The keys of `source`, fetched when there are none or they are about to expire.
pub struct Renewing<F> {
    source: F,
    held: Mutex<Option<Held>>,
}

impl<F: Fetch> Renewing<F> {
    pub fn new(source: F) -> Renewing<F> {
        Renewing {
            source,
            held: Mutex::new(None),
        }
    }
}

impl<F: Fetch> std::fmt::Debug for Renewing<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Renewing({})", self.source.describe())
    }
}

/// When keys that expire at `expires` are to be fetched again, seen at `now`.
fn renew_at(expires: Option<SystemTime>, now: SystemTime) -> Option<Instant> {
    expires.map(|at| {
        let left = at.duration_since(now).unwrap_or_default();
        let before = if left > RENEW_BEFORE {
            RENEW_BEFORE
        } else {
            RENEW_LATE_BEFORE
        };
        Instant::now() + left.saturating_sub(before)
    })
}

#[async_trait]
impl<F: Fetch> CredentialProvider for Renewing<F> {
    type Credential = AwsCredential;

    async fn get_credential(&self) -> object_store::Result<Arc<AwsCredential>> {
        let mut held = self.held.lock().await;
        if let Some(h) = held.as_ref()
            && h.renew_at.is_none_or(|at| Instant::now() < at)
        {
            return Ok(Arc::clone(&h.credential));
        }
        let fetched = self
            .source
            .fetch()
            .await
            .map_err(|why| object_store::Error::Generic {
                store: "S3",
                source: format!("{}: {why}", self.source.describe()).into(),
            })?;
        let credential = Arc::new(fetched.credential);
        *held = Some(Held {
            credential: Arc::clone(&credential),
            renew_at: renew_at(fetched.expires, SystemTime::now()),
        });
        Ok(credential)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Counted {
        fetches: Arc<AtomicUsize>,
        lifetime: Option<Duration>,
    }

    #[async_trait]
    impl Fetch for Counted {
        async fn fetch(&self) -> Result<Fetched, String> {
            let n = self.fetches.fetch_add(1, Ordering::SeqCst);
            Ok(Fetched {
                credential: AwsCredential {
                    key_id: format!("K{n}"),
                    secret_key: "s".into(),
                    token: None,
                },
                expires: self.lifetime.map(|l| SystemTime::now() + l),
            })
        }

        fn describe(&self) -> String {
            "counted".into()
        }
    }

    fn key_ids(lifetime: Option<Duration>, asks: usize) -> (Vec<String>, usize) {
        let fetches = Arc::new(AtomicUsize::new(0));
        let renewing = Renewing::new(Counted {
            fetches: Arc::clone(&fetches),
            lifetime,
        });
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let ids = (0..asks)
            .map(|_| {
                let c = runtime.block_on(renewing.get_credential()).unwrap();
                c.key_id.clone()
            })
            .collect();
        (ids, fetches.load(Ordering::SeqCst))
    }

    #[test]
    fn keys_are_kept_until_five_minutes_before_they_expire() {
        assert_eq!(key_ids(None, 3), (vec!["K0".into(); 3], 1), "never expire");
        let hour = Some(Duration::from_secs(3600));
        assert_eq!(key_ids(hour, 3), (vec!["K0".into(); 3], 1), "an hour left");
        let soon = Some(Duration::from_secs(60));
        assert_eq!(key_ids(soon, 3), (vec!["K0".into(); 3], 1), "a minute left");
        let ending = Some(Duration::from_secs(5));
        let (ids, fetches) = key_ids(ending, 3);
        assert_eq!(
            (ids, fetches),
            (vec!["K0".into(), "K1".into(), "K2".into()], 3)
        );
    }

    #[test]
    fn renewal_falls_five_minutes_before_expiry() {
        let now = SystemTime::now();
        assert!(renew_at(None, now).is_none());
        let at = renew_at(Some(now + Duration::from_secs(3600)), now).unwrap();
        let left = at - Instant::now();
        assert!(left <= Duration::from_secs(3300) && left > Duration::from_secs(3290));
        let past = renew_at(Some(now - Duration::from_secs(10)), now).unwrap();
        assert!(past <= Instant::now());
        let late = renew_at(Some(now + Duration::from_secs(60)), now).unwrap();
        let left = late - Instant::now();
        assert!(left <= Duration::from_secs(50) && left > Duration::from_secs(40));
    }
}
