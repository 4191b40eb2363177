//! A store over an object-store client: S3 ([`super::s3`]) or a plain web server
//! ([`super::http`]). Key `a/b` is the object `<root>/a/b`.
//!
//! Owns the mapping of store keys to object names, the translation of client errors into the
//! crate's errors, and the concurrency of batches: `get_many`, `put_many` and `delete_prefix`
//! keep up to `concurrency` requests in flight. Every read is one GET (never a HEAD first);
//! listings use the `/` delimiter and follow pagination. Each object operation, retries of
//! throttled (503 SlowDown), failed (5xx) or dropped requests included, ends within the
//! configured timeout. A PUT replaces an object whole: S3 never shows half an upload.
//! The client (object_store) runs on one private runtime thread ([`runtime`]). It must not
//! know how a service's client is configured (that is the service's module) nor anything of
//! Zarr.

mod batch;
mod body;
pub mod runtime;
pub(crate) mod single_deletes;

use super::http::index_page;
use super::{EachObject, ObjectLimit, Produce, Store, StoreKey, StorePrefix, Tail};
use crate::error::{Error, Result};
use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{
    BackoffConfig, ClientOptions, GetRange, ObjectStore, ObjectStoreExt, PutPayload, RetryConfig,
};
use single_deletes::{BULK_DELETE_NOT_FOUND, SingleDeletes, refuses_bulk_delete};
use std::future::Future;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::Semaphore;

/// Keys per bulk delete request (the S3 limit).
const DELETE_BATCH: usize = 1000;

/// Longest wait for a TCP connection, whatever the overall timeout.
const MAX_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Environment variable: most object requests in flight at once per batch.
pub const CONCURRENCY_ENV: &str = "NCZARR_RS_S3_CONCURRENCY";
/// Environment variable: seconds one object operation may take, retries included.
pub const TIMEOUT_ENV: &str = "NCZARR_RS_S3_TIMEOUT";
/// Environment variable: how often a throttled, failed or dropped request is retried.
pub const RETRIES_ENV: &str = "NCZARR_RS_S3_RETRIES";

const DEFAULT_CONCURRENCY: usize = 64;
const MAX_CONCURRENCY: usize = 1024;
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
const DEFAULT_RETRIES: usize = 4;

/// A limit from the environment variable `key`, else `default`; one that does not parse or
/// that `ok` refuses is [`Error::Invalid`].
fn parse_limit<T: std::str::FromStr>(
    env: &dyn Fn(&str) -> Option<String>,
    key: &str,
    default: T,
    ok: impl Fn(&T) -> bool,
) -> Result<T> {
    match crate::env::value(env, key) {
        None => Ok(default),
        Some(text) => text
            .parse::<T>()
            .ok()
            .filter(ok)
            .ok_or_else(|| Error::Invalid(format!("{key}={text:?} is out of range"))),
    }
}

/// How requests are made: how many at once, how long each may take, how often a failed one is
/// tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transfer {
    /// Requests in flight at once in a batch.
    pub concurrency: usize,
    /// The longest any one object operation may take, retries included.
    pub timeout: Duration,
    /// Retries of throttled, failed or dropped requests.
    pub retries: usize,
}

impl Transfer {
    /// The limits the environment sets ([`CONCURRENCY_ENV`], [`TIMEOUT_ENV`],
    /// [`RETRIES_ENV`]), else the defaults; a value out of range is [`Error::Invalid`].
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Result<Transfer> {
        let timeout_secs = parse_limit(env, TIMEOUT_ENV, DEFAULT_TIMEOUT.as_secs_f64(), |t| {
            t.is_finite() && *t > 0.0 && *t <= 86_400.0
        })?;
        Ok(Transfer {
            concurrency: parse_limit(env, CONCURRENCY_ENV, DEFAULT_CONCURRENCY, |n| {
                (1..=MAX_CONCURRENCY).contains(n)
            })?,
            timeout: Duration::from_secs_f64(timeout_secs),
            retries: parse_limit(env, RETRIES_ENV, DEFAULT_RETRIES, |n| *n <= 100)?,
        })
    }

    /// The longest wait for a TCP connection: the timeout, at most [`MAX_CONNECT_TIMEOUT`].
    pub(crate) fn connect_timeout(&self) -> Duration {
        self.timeout.min(MAX_CONNECT_TIMEOUT)
    }

    /// The client options and retry rules for these limits.
    pub(crate) fn client_config(&self) -> (ClientOptions, RetryConfig) {
        let retry = RetryConfig {
            backoff: BackoffConfig {
                init_backoff: Duration::from_millis(100),
                max_backoff: self.timeout.min(Duration::from_secs(5)),
                base: 2.0,
            },
            max_retries: self.retries,
            retry_timeout: self.timeout,
        };
        let options = ClientOptions::new()
            .with_timeout(self.timeout)
            .with_connect_timeout(self.connect_timeout())
            .with_allow_http(true);
        (options, retry)
    }
}

/// A web server's answer to the GET of a directory's index page.
#[derive(Debug)]
pub(crate) enum IndexPage {
    /// The page.
    Found(Vec<u8>),
    /// The server gives no page to read (why): the directory cannot be listed so.
    Refused(String),
}

/// Reads the index pages of a web server's directories (one without WebDAV lists by them).
#[async_trait::async_trait]
pub(crate) trait IndexPages: std::fmt::Debug + Send + Sync {
    /// The index page of the directory at the object path `dir` (empty: the top), or why the
    /// server gives none. An error is a failure that may pass (the server unreachable, a
    /// server error), which the store reports as the client's own failures.
    async fn page(&self, dir: &str) -> std::result::Result<IndexPage, object_store::Error>;
}

/// A [`Store`] over one key prefix of one object-store client.
#[derive(Debug)]
pub struct RemoteStore {
    client: Arc<dyn ObjectStore>,
    /// The client listings use (the same one, unless the service lists under other rules).
    lister: Arc<dyn ObjectStore>,
    /// Objects larger than this are refused, not read whole.
    limit: ObjectLimit,
    /// Object name of the dataset root, without leading or trailing `/` (empty: the top).
    root: String,
    transfer: Transfer,
    named: Arc<Named>,
    /// How often the server answered ranged GETs with whole objects: 2 for a round of them
    /// (one `get_runs_many` or `get_tails_many`) that it served no range of, 1 for a round in
    /// which it served some (misses of a cache); from 2 on, every read asks for whole objects.
    ranges_refused: AtomicUsize,
    /// Set once a listing has found anything: until then an empty listing over HTTP is a
    /// server that cannot list (it answered `PROPFIND` with 404).
    listed_something: AtomicBool,
    /// A web server that refused a WebDAV listing listed a directory by its index page: the
    /// next listings ask for index pages alone.
    lists_by_index_page: AtomicBool,
    /// Paths index pages listed as files: they have no index page to ask for.
    index_page_files: Mutex<std::collections::HashSet<String>>,
    /// Where index pages are read, for a web server.
    index_pages: Option<Arc<dyn IndexPages>>,
    /// Deletes of one object a request, for a service that refuses bulk deletes.
    single_deletes: Option<SingleDeletes>,
}

/// Why an object operation failed, before it is given the store's context.
enum Failure {
    Client(object_store::Error),
    TimedOut(Duration),
    /// The object is, or is announced to be, larger than this many bytes.
    Larger(u64),
}

impl From<object_store::Error> for Failure {
    fn from(e: object_store::Error) -> Self {
        Failure::Client(e)
    }
}

/// Whole objects held at once where runs or tails are cut from whole objects (a server that
/// serves no ranges): the objects may be large, since their ranges were asked for.
const WHOLE_HELD: usize = 4;

/// How the message of an operation that timed out begins.
const NO_ANSWER: &str = "no answer within";

/// The most characters of a failed listing's answer that its error repeats.
const LISTING_WHY_CHARS: usize = 300;

/// Who serves a remote store: decides how its failures read and whether it can list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Service {
    /// An S3-compatible object store.
    S3,
    /// A plain web server (read-only; lists only when it speaks WebDAV).
    Http,
}

/// What a store's messages name: the service, the store, and how its requests are signed.
#[derive(Debug)]
struct Named {
    service: Service,
    described: String,
    credentials_source: String,
}

impl Named {
    /// Turns a failure of the operation `what` into the crate error.
    fn error(&self, what: &str, f: Failure) -> Error {
        use object_store::Error as E;
        let (store, credentials) = (&self.described, &self.credentials_source);
        let failed = |why: String| match self.service {
            Service::S3 => Error::Remote {
                store: store.to_string(),
                why,
            },
            Service::Http => Error::Web {
                store: store.to_string(),
                why,
            },
        };
        match f {
            Failure::TimedOut(t) => {
                failed(format!("{what}: no answer within {:.1} s", t.as_secs_f64()))
            }
            Failure::Larger(limit) => Error::ObjectTooLarge {
                what: format!("{store}: {what}"),
                limit,
            },
            Failure::Client(e @ E::NotFound { .. }) => {
                Error::NotFound(format!("{store}: {what}: {e}"))
            }
            Failure::Client(e @ (E::Unauthenticated { .. } | E::PermissionDenied { .. })) => {
                Error::Auth(format!("{store}: {what} (credentials: {credentials}): {e}"))
            }
            Failure::Client(e) => {
                let text = full_chain(&e);
                match s3_error_kind(&text) {
                    Some(S3ErrorKind::Auth) => Error::Auth(format!(
                        "{store}: {what} (credentials: {credentials}): {text}"
                    )),
                    Some(S3ErrorKind::NotFound) => {
                        Error::NotFound(format!("{store}: {what}: {text}"))
                    }
                    None => failed(format!("{what}: {text}")),
                }
            }
        }
    }

    /// What a failed listing means. A web server that refuses it (it speaks no WebDAV, denies
    /// the method, or answers with something that is no listing) cannot list at all:
    /// [`Error::NoListing`]. Its other failures (a timeout, a dropped connection, another
    /// server error) stay [`Error::Web`]: they may pass.
    fn listing_error(&self, e: Error) -> Error {
        let no_listing = |store: String, why: &str| {
            // The server's answer may be a whole page: what precedes it says enough.
            let first_line = why.lines().next().unwrap_or_default();
            let before_page = first_line.split('<').next().unwrap_or_default();
            let mut why = before_page.trim_end_matches([' ', ':']).to_string();
            if let Some((cut, _)) = why.char_indices().nth(LISTING_WHY_CHARS) {
                why.truncate(cut);
                why.push_str("...");
            }
            Error::NoListing { store, why }
        };
        match (self.service, e) {
            (Service::Http, Error::Auth(why)) => no_listing(self.described.clone(), &why),
            (Service::Http, Error::Web { store, why }) if refuses_listing(&why) => {
                no_listing(store, &why)
            }
            (_, e) => e,
        }
    }
}

/// True when a web server's answer to a listing says it will never list: the method is not
/// allowed or not implemented (405, 501), the request is refused as bad (400), or the answer
/// is no WebDAV listing.
fn refuses_listing(why: &str) -> bool {
    ["status code: 400", "status code: 405", "status code: 501"]
        .iter()
        .any(|code| why.contains(code))
        || why.contains("PROPFIND response")
}

enum S3ErrorKind {
    Auth,
    NotFound,
}

/// S3 error codes that mean the credentials were refused.
const AUTH_CODES: [&str; 7] = [
    "SignatureDoesNotMatch",
    "InvalidAccessKeyId",
    "AccessDenied",
    "ExpiredToken",
    "InvalidToken",
    "TokenRefreshRequired",
    "AuthorizationHeaderMalformed",
];

/// The client reports some failures (listings among them) as generic errors that carry the
/// HTTP status and the S3 error document only as text: classify them by the S3 error code.
fn s3_error_kind(text: &str) -> Option<S3ErrorKind> {
    let code = |c: &str| text.contains(&format!("<Code>{c}</Code>"));
    if AUTH_CODES.iter().any(|c| code(c))
        || text.contains("status code: 401")
        || text.contains("status code: 403")
    {
        Some(S3ErrorKind::Auth)
    } else if code("NoSuchBucket") || code("NoSuchKey") || text.contains("status code: 404") {
        Some(S3ErrorKind::NotFound)
    } else {
        None
    }
}

/// The error and its causes on one line ("connection refused" hides several levels down).
pub(crate) fn full_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let s_text = s.to_string();
        if !text.contains(&s_text) {
            text.push_str(": ");
            text.push_str(&s_text);
        }
        source = s.source();
    }
    text
}

impl RemoteStore {
    /// A store of the objects below `root` that `client` of `service` serves; `described`
    /// names it in messages, `credentials_source` says how its requests are signed.
    pub(crate) fn new(
        service: Service,
        client: Arc<dyn ObjectStore>,
        root: String,
        transfer: Transfer,
        credentials_source: String,
        described: String,
    ) -> RemoteStore {
        RemoteStore {
            lister: Arc::clone(&client),
            client,
            limit: ObjectLimit::default(),
            root,
            transfer,
            named: Arc::new(Named {
                service,
                described,
                credentials_source,
            }),
            ranges_refused: AtomicUsize::new(0),
            listed_something: AtomicBool::new(false),
            lists_by_index_page: AtomicBool::new(false),
            index_page_files: Mutex::default(),
            index_pages: None,
            single_deletes: None,
        }
    }

    /// True once the server has answered ranged GETs with whole objects in two rounds: it
    /// serves no ranges.
    fn serves_no_ranges(&self) -> bool {
        self.ranges_refused.load(Ordering::Relaxed) >= 2
    }

    /// Counts a round of ranged GETs by how the server answered them.
    fn count_round(&self, round: &RangeAnswers) {
        if round.refused.load(Ordering::Relaxed) {
            let weight = if round.served.load(Ordering::Relaxed) {
                1
            } else {
                2
            };
            self.ranges_refused.fetch_add(weight, Ordering::Relaxed);
        }
    }

    /// Directories a listing of which the server refuses are listed by their index pages,
    /// which `pages` reads.
    pub(crate) fn listing_by_index_pages(mut self, pages: Arc<dyn IndexPages>) -> RemoteStore {
        self.index_pages = Some(pages);
        self
    }

    /// Deletes that the service refuses as bulk requests are made one object a request,
    /// as `single_deletes` says.
    pub(crate) fn deleting_one_by_one_where_refused(
        mut self,
        single_deletes: SingleDeletes,
    ) -> RemoteStore {
        self.single_deletes = Some(single_deletes);
        self
    }

    /// Deletes the objects at `paths` through `single`'s client, one request each, as many
    /// in flight and each within the time as other object requests.
    fn delete_one_by_one(&self, single: &SingleDeletes, paths: Vec<Path>) -> Result<()> {
        self.run_many_on(single.client()?, paths, |client, path| {
            (format!("DELETE {path}"), delete_one(client, path))
        })?;
        Ok(())
    }

    /// Listings go through `lister` instead.
    pub(crate) fn listing_through(mut self, lister: Arc<dyn ObjectStore>) -> RemoteStore {
        self.lister = lister;
        self
    }

    /// The object name of the dataset root.
    pub fn root(&self) -> &str {
        &self.root
    }

    /// The object paths of `keys`, in order.
    fn object_paths(&self, keys: &[StoreKey]) -> Result<Vec<Path>> {
        keys.iter().map(|k| self.object_path(k.as_str())).collect()
    }

    /// The object name of a key or prefix (`""`: the dataset root).
    fn object_path(&self, rel: &str) -> Result<Path> {
        let full = match (self.root.is_empty(), rel.is_empty()) {
            (true, _) => rel.to_string(),
            (false, true) => self.root.clone(),
            (false, false) => format!("{}/{rel}", self.root),
        };
        Path::parse(&full).map_err(|e| Error::BadKey {
            key: rel.to_string(),
            why: e.to_string(),
        })
    }

    /// The store key of an object name below the root, if it can be one.
    fn key_of(&self, path: &Path) -> Option<StoreKey> {
        let raw = path.as_ref();
        let rel = if self.root.is_empty() {
            raw
        } else {
            raw.strip_prefix(self.root.as_str())?.strip_prefix('/')?
        };
        StoreKey::new(rel).ok()
    }

    /// Runs `op` on the runtime, bounded by the timeout, and names `what` in any error.
    fn run<T, F>(&self, what: String, op: F) -> Result<T>
    where
        T: Send + 'static,
        F: Future<Output = std::result::Result<T, Failure>> + Send + 'static,
    {
        let timeout = self.transfer.timeout;
        let outcome = runtime::run(async move {
            match tokio::time::timeout(timeout, op).await {
                Ok(r) => r,
                Err(_) => Err(Failure::TimedOut(timeout)),
            }
        })?;
        outcome.map_err(|f| self.error(&what, f))
    }

    fn error(&self, what: &str, f: Failure) -> Error {
        self.named.error(what, f)
    }

    /// Runs the listing `op` of `prefix` (given `None` for the top of the service) through the
    /// lister; errors name it `LIST <prefix>/<how>`.
    fn listing<T, F, Fut>(&self, how: &str, prefix: &StorePrefix, op: F) -> Result<T>
    where
        T: Send + 'static,
        F: Fn(Arc<dyn ObjectStore>, Option<Path>) -> Fut,
        Fut: Future<Output = std::result::Result<T, Failure>> + Send + 'static,
    {
        let path = self.object_path(prefix.as_str())?;
        let what = format!("LIST {path}/{how}");
        let at = (!path.as_ref().is_empty()).then_some(path);
        match self.run(what.clone(), op(Arc::clone(&self.lister), at.clone())) {
            Ok(listed) => Ok(listed),
            Err(e) => match self.named.listing_error(e) {
                // A failure that may pass, other than a timeout (the listing has had its
                // time): asked again through the client that retries.
                Error::Web { ref why, .. } if !why.contains(NO_ANSWER) => self
                    .run(what, op(Arc::clone(&self.client), at))
                    .map_err(|e| self.named.listing_error(e)),
                e => Err(e),
            },
        }
    }

    /// The children of `prefix` as the web server's index page of the directory lists them,
    /// for a server that gives no WebDAV listing (`refused`, returned when there is no such
    /// page, or when no listing has found anything yet and it lists nothing). What a page
    /// listed as a file has no children, and no page is asked for.
    fn index_page_children(&self, prefix: &StorePrefix, refused: Error) -> Result<Vec<String>> {
        let path = self.object_path(prefix.as_str())?;
        let dir = path.as_ref().to_string();
        let files = || {
            self.index_page_files
                .lock()
                .unwrap_or_else(|p| p.into_inner())
        };
        if files().contains(&dir) {
            return Ok(Vec::new());
        }
        let Some(pages) = self.index_pages.clone() else {
            return Err(refused);
        };
        let asked = dir.clone();
        let page = self.run(format!("GET {dir}/ (index page)"), async move {
            Ok(pages.page(&asked).await?)
        });
        let refused = |page_why: &str| match refused {
            Error::NoListing { store, why } => Error::NoListing {
                store,
                why: format!("{why}; nor does an index page of the directory list it{page_why}"),
            },
            other => other,
        };
        // A failure that may pass is that failure, not a server that cannot list.
        let page = match page? {
            IndexPage::Found(page) => page,
            IndexPage::Refused(why) => return Err(refused(&format!(" ({why})"))),
        };
        let entries: Vec<index_page::Entry> =
            index_page::entries(&String::from_utf8_lossy(&page), &dir)
                .into_iter()
                .filter(|e| StoreKey::new(&e.name).is_ok())
                .collect();
        if entries.is_empty() && !self.listed_something.load(Ordering::Relaxed) {
            return Err(refused(""));
        }
        {
            let mut files = files();
            let below = |name: &str| {
                if dir.is_empty() {
                    name.to_string()
                } else {
                    format!("{dir}/{name}")
                }
            };
            files.extend(
                entries
                    .iter()
                    .filter(|e| !e.directory)
                    .map(|e| below(&e.name)),
            );
            if files.len() > MOST_INDEX_PAGE_FILES {
                // Forgotten: such a path is asked for a page, which lists nothing.
                files.clear();
            }
        }
        self.listed_something.store(true, Ordering::Relaxed);
        self.lists_by_index_page.store(true, Ordering::Relaxed);
        Ok(entries.into_iter().map(|e| e.name).collect())
    }

    /// Runs one operation per item, at most `concurrency` at a time ([`batch::in_order`]),
    /// each bounded by the timeout; results come back in input order. The first failure is
    /// returned.
    fn run_many<I, T, F, Fut>(&self, items: Vec<I>, op: F) -> Result<Vec<T>>
    where
        I: Send + 'static,
        T: Send + 'static,
        F: Fn(Arc<dyn ObjectStore>, I) -> (String, Fut) + Send + 'static,
        Fut: Future<Output = std::result::Result<T, Failure>> + Send + 'static,
    {
        self.run_many_on(Arc::clone(&self.client), items, op)
    }

    /// [`RemoteStore::run_many`] through `client`.
    fn run_many_on<I, T, F, Fut>(
        &self,
        client: Arc<dyn ObjectStore>,
        items: Vec<I>,
        op: F,
    ) -> Result<Vec<T>>
    where
        I: Send + 'static,
        T: Send + 'static,
        F: Fn(Arc<dyn ObjectStore>, I) -> (String, Fut) + Send + 'static,
        Fut: Future<Output = std::result::Result<T, Failure>> + Send + 'static,
    {
        if items.is_empty() {
            return Ok(Vec::new());
        }
        let timeout = self.transfer.timeout;
        let concurrency = self.transfer.concurrency;
        let outcome = runtime::run(batch::in_order(items, concurrency, move |item| {
            let (what, fut) = op(Arc::clone(&client), item);
            bounded(timeout, what, fut)
        }))?;
        outcome.map_err(|(what, f)| self.error(&what, f))
    }
}

/// The most file paths kept from index pages (beyond, they are forgotten and asked again).
const MOST_INDEX_PAGE_FILES: usize = 1 << 20;

/// `fut`, the operation `what`, failing once it has taken `timeout`.
async fn bounded<T>(
    timeout: Duration,
    what: String,
    fut: impl Future<Output = std::result::Result<T, Failure>>,
) -> std::result::Result<T, (String, Failure)> {
    match tokio::time::timeout(timeout, fut).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(f)) => Err((what, f)),
        Err(_) => Err((what, Failure::TimedOut(timeout))),
    }
}

/// One GET, answered as far as its head: `None` for a missing object.
async fn get_found(
    client: &dyn ObjectStore,
    path: &Path,
) -> std::result::Result<Option<object_store::GetResult>, Failure> {
    match client.get(path).await {
        Ok(result) => Ok(Some(result)),
        Err(object_store::Error::NotFound { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// One GET; a missing object is `None`. The body is gathered as it arrives
/// ([`body::gather`]).
async fn get_object(
    client: Arc<dyn ObjectStore>,
    path: Path,
    limit: u64,
) -> std::result::Result<Option<Vec<u8>>, Failure> {
    match get_found(&*client, &path).await? {
        Some(result) => Ok(Some(body::gather(result, limit).await?)),
        None => Ok(None),
    }
}

/// One GET, the `object`-th of a batch, its body sent to `to` frame by frame
/// ([`body::send`]); the body's length, `None` for a missing object.
async fn send_object(
    client: Arc<dyn ObjectStore>,
    path: Path,
    object: usize,
    to: tokio::sync::mpsc::Sender<body::Frame>,
    limit: u64,
) -> std::result::Result<Option<u64>, Failure> {
    match get_found(&*client, &path).await? {
        Some(result) => Ok(Some(body::send(result, object, &to, limit).await?)),
        None => Ok(None),
    }
}

/// A span of an object as one GET returned it.
#[derive(Debug)]
struct Spanned {
    /// The object's length.
    len: u64,
    /// The span's bytes, as received (not copied).
    bytes: Bytes,
    /// The object's version (its ETag), when the server gave one.
    version: Option<String>,
}

/// True when the spans of one object came from one version of it (or all found it absent):
/// one span; or all absent; or all present with the same length and the same known ETag.
fn one_version(spans: &[Option<Spanned>]) -> bool {
    match spans {
        [] | [_] => true,
        [first, rest @ ..] => match first {
            None => rest.iter().all(Option::is_none),
            Some(f) => {
                f.version.is_some()
                    && rest.iter().all(|s| {
                        s.as_ref()
                            .is_some_and(|s| s.len == f.len && s.version == f.version)
                    })
            }
        },
    }
}

/// How a server answered one round of ranged GETs.
#[derive(Debug, Default)]
struct RangeAnswers {
    /// Some GET got its range.
    served: AtomicBool,
    /// Some GET got the whole object, longer than the range.
    refused: AtomicBool,
}

/// One ranged GET: the object's length and the bytes of `range` it has (as far as the object
/// goes). An answer that is not exactly that range (a server that will not serve it as asked,
/// caps it, or sends another) falls back to the whole object, from which the range is cut, so
/// the caller always gets the bytes it asked for and the object's true length. An answer of
/// the whole object where it is longer than the range asked for is noted in `round`, as is an
/// answer of the range.
async fn get_range(
    client: Arc<dyn ObjectStore>,
    path: Path,
    range: GetRange,
    limit: u64,
    round: Arc<RangeAnswers>,
) -> std::result::Result<Option<Spanned>, Failure> {
    let options = object_store::GetOptions {
        range: Some(range.clone()),
        ..Default::default()
    };
    match client.get_opts(&path, options).await {
        Ok(result) => {
            let len = result.meta.size;
            let version = result.meta.e_tag.clone();
            let got = result.range.clone();
            let bytes = Bytes::from(body::gather(result, limit).await?);
            let asked = range.as_range(len).ok();
            if asked == Some(got.clone()) && got.end - got.start == bytes.len() as u64 {
                round.served.store(true, Ordering::Relaxed);
                return Ok(Some(Spanned {
                    len,
                    bytes,
                    version,
                }));
            }
        }
        Err(object_store::Error::NotFound { .. }) => return Ok(None),
        Err(object_store::Error::NotSupported { .. }) => {
            let spanned = get_object(client, path, limit)
                .await?
                .map(|w| cut(&w, &range));
            if spanned
                .as_ref()
                .is_some_and(|s| (s.bytes.len() as u64) < s.len)
            {
                round.refused.store(true, Ordering::Relaxed);
            }
            return Ok(spanned);
        }
        Err(_) => {}
    }
    Ok(get_object(client, path, limit)
        .await?
        .map(|w| cut(&w, &range)))
}

/// The bytes of `range` in the whole object `whole`, copied (the whole object is not kept).
fn cut(whole: &[u8], range: &GetRange) -> Spanned {
    let len = whole.len() as u64;
    // A range that starts past the end has no bytes of the object.
    let at = range.as_range(len).unwrap_or(len..len);
    Spanned {
        len,
        bytes: Bytes::copy_from_slice(&whole[at.start as usize..at.end as usize]),
        version: None,
    }
}

/// Deletes every object of `locations` in bulk requests (missing objects are fine).
async fn delete_in_bulk(
    client: Arc<dyn ObjectStore>,
    locations: Vec<Path>,
) -> std::result::Result<(), object_store::Error> {
    let locations = futures::stream::iter(locations.into_iter().map(Ok)).boxed();
    let mut deleted = client.delete_stream(locations);
    while let Some(outcome) = deleted.next().await {
        match outcome {
            Ok(_) => {}
            // A bulk request reports a missing object as deleted: not found, it is the request
            // itself, which a service without bulk deletes may answer so (but for a bucket
            // that is not there).
            Err(e @ object_store::Error::NotFound { .. })
                if e.to_string().contains("NoSuchBucket") =>
            {
                return Err(e);
            }
            Err(object_store::Error::NotFound { .. }) => {
                return Err(object_store::Error::Generic {
                    store: "S3",
                    source: BULK_DELETE_NOT_FOUND.into(),
                });
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// One DELETE through a client that deletes one object a request; a missing object is fine.
async fn delete_one(client: Arc<dyn ObjectStore>, path: Path) -> std::result::Result<(), Failure> {
    match client.delete(&path).await {
        Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

impl Store for RemoteStore {
    fn get(&self, key: &StoreKey) -> Result<Option<Vec<u8>>> {
        let path = self.object_path(key.as_str())?;
        let client = Arc::clone(&self.client);
        let limit = self.limit.get();
        self.run(format!("GET {path}"), get_object(client, path, limit))
    }

    fn get_many(&self, keys: &[StoreKey]) -> Result<Vec<Option<Vec<u8>>>> {
        let paths = self.object_paths(keys)?;
        let limit = self.limit.get();
        self.run_many(paths, move |client, path| {
            (format!("GET {path}"), get_object(client, path, limit))
        })
    }

    /// Each object is handed to `each` as it arrives ([`batch::hand_out`]): up to `held`
    /// fetched ahead of their use, as many requests in flight as the settings allow. A worker
    /// thread (which must not wait for others) gets them by batches.
    fn get_each(&self, keys: &[StoreKey], held: usize, each: &EachObject<'_>) -> Result<()> {
        if keys.len() <= 1 || rayon::current_thread_index().is_some() {
            return super::get_each_in_batches(self, keys, held, each);
        }
        let paths = self.object_paths(keys)?;
        let client = Arc::clone(&self.client);
        let timeout = self.transfer.timeout;
        let concurrency = self.transfer.concurrency;
        let limit = self.limit.get();
        let held = Arc::new(Semaphore::new(held.clamp(1, Semaphore::MAX_PERMITS)));
        batch::hand_out(
            |to| {
                let fetched = runtime::run(batch::as_they_come(
                    paths,
                    concurrency,
                    held,
                    move |path| {
                        let what = format!("GET {path}");
                        bounded(timeout, what, get_object(Arc::clone(&client), path, limit))
                    },
                    to,
                ))?;
                fetched.map_err(|(what, f)| self.error(&what, f))
            },
            each,
        )
    }

    /// The bodies are copied from the frames they arrive in straight into the caller's buffers
    /// (the default would gather each into a buffer of its own first), frame by frame on this
    /// thread while the GETs go on ([`body::send`]).
    fn get_many_into(
        &self,
        keys: &[StoreKey],
        outs: &mut [&mut [u8]],
    ) -> Result<Vec<Option<usize>>> {
        let work = keys
            .iter()
            .enumerate()
            .map(|(i, k)| Ok((i, self.object_path(k.as_str())?)))
            .collect::<Result<Vec<_>>>()?;
        let (to, mut from) = tokio::sync::mpsc::channel::<body::Frame>(body::FRAMES_QUEUED);
        let limit = self.limit.get();
        std::thread::scope(|scope| {
            // The channel closes once the batch is over (its operations hold the senders).
            let fetching = std::thread::Builder::new()
                .name("nczarr-rs-fetch".into())
                .spawn_scoped(scope, move || {
                    self.run_many(work, move |client, (i, path)| {
                        let what = format!("GET {path}");
                        (what, send_object(client, path, i, to.clone(), limit))
                    })
                })
                .map_err(|e| Error::Internal(format!("cannot start a fetching thread: {e}")))?;
            while let Some(frame) = from.blocking_recv() {
                if let Some(out) = outs.get_mut(frame.object) {
                    body::copy(&frame, out);
                }
            }
            let lens = fetching
                .join()
                .map_err(|_| Error::Internal("the fetching thread panicked".into()))??;
            Ok(lens
                .into_iter()
                .map(|len| len.map(|n| usize::try_from(n).unwrap_or(usize::MAX)))
                .collect())
        })
    }

    /// One ranged GET per span of an object's runs ([`super::merged_spans`]: runs at most
    /// [`super::RANGE_GAP_MERGED`] apart share one), all of them concurrently: a time series
    /// through large chunks takes a few elements far apart from each, which one span from the
    /// first to the last would fetch most of the chunk for.
    fn get_runs_many(
        &self,
        keys: &[StoreKey],
        runs: &mut [super::Runs<'_>],
    ) -> Result<Vec<Option<u64>>> {
        if self.serves_no_ranges() {
            let lens = Mutex::new(vec![None; keys.len()]);
            let runs = Mutex::new(runs);
            self.get_each(keys, WHOLE_HELD, &|i, value| {
                let len = super::runs_of_whole(
                    value,
                    &mut runs.lock().unwrap_or_else(|p| p.into_inner())[i],
                );
                lens.lock().unwrap_or_else(|p| p.into_inner())[i] = len;
                Ok(())
            })?;
            return Ok(lens.into_inner().unwrap_or_else(|p| p.into_inner()));
        }
        let mut work = Vec::new();
        let mut owner = Vec::new();
        for (i, (k, r)) in keys.iter().zip(runs.iter()).enumerate() {
            let path = self.object_path(k.as_str())?;
            let wanted = r.iter().map(|(o, b)| *o..o.saturating_add(b.len() as u64));
            for span in super::merged_spans(wanted) {
                work.push((path.clone(), span));
                owner.push(i);
            }
        }
        let starts: Vec<u64> = work.iter().map(|(_, span)| span.start).collect();
        let limit = self.limit.get();
        let round = Arc::new(RangeAnswers::default());
        let answers = Arc::clone(&round);
        let got = self.run_many(work, move |client, (path, span)| {
            (
                format!("GET {path} bytes {}-{}", span.start, span.end),
                get_range(
                    client,
                    path,
                    GetRange::Bounded(span),
                    limit,
                    answers.clone(),
                ),
            )
        })?;
        self.count_round(&round);
        let mut per_key: Vec<(Vec<u64>, Vec<Option<Spanned>>)> =
            (0..keys.len()).map(|_| (Vec::new(), Vec::new())).collect();
        for ((found, i), start) in got.into_iter().zip(owner).zip(starts) {
            per_key[i].0.push(start);
            per_key[i].1.push(found);
        }
        let mut lens = Vec::with_capacity(keys.len());
        // Objects replaced (or deleted) between two of their GETs: read again whole, in one
        // GET, so that no object is a mixture of two versions.
        let mut again = Vec::new();
        for (i, (starts, spans)) in per_key.into_iter().enumerate() {
            if !one_version(&spans) {
                again.push(i);
                lens.push(None);
                continue;
            }
            let mut len = None;
            for (start, span) in starts.into_iter().zip(spans) {
                if let Some(span) = span {
                    super::copy_runs(&span.bytes, start, &mut runs[i]);
                    len = Some(span.len);
                }
            }
            lens.push(len);
        }
        if !again.is_empty() {
            let wanted: Vec<StoreKey> = again.iter().map(|&i| keys[i].clone()).collect();
            let whole = self.get_many(&wanted)?;
            for (i, value) in again.into_iter().zip(whole) {
                lens[i] = super::runs_of_whole(value, &mut runs[i]);
            }
        }
        Ok(lens)
    }

    /// [`Store::get_runs_many`] fetches only the spans of the runs, by ranged GETs, unless
    /// the server has been found to serve no ranges.
    fn reads_runs_in_place(&self, _key: &StoreKey) -> bool {
        !self.serves_no_ranges()
    }

    /// One suffix-range GET per object, all of them concurrently.
    fn get_tails_many(&self, keys: &[StoreKey], n: usize) -> Result<Vec<Option<Tail>>> {
        if self.serves_no_ranges() {
            let tails = Mutex::new(vec![None; keys.len()]);
            self.get_each(keys, WHOLE_HELD, &|i, value| {
                tails.lock().unwrap_or_else(|p| p.into_inner())[i] =
                    value.map(|w| Tail::of_whole(&w, n));
                Ok(())
            })?;
            return Ok(tails.into_inner().unwrap_or_else(|p| p.into_inner()));
        }
        let paths = self.object_paths(keys)?;
        let limit = self.limit.get();
        let round = Arc::new(RangeAnswers::default());
        let answers = Arc::clone(&round);
        let tails = self.run_many(paths, move |client, path| {
            let suffix = GetRange::Suffix(n as u64);
            (
                format!("GET {path} last {n} bytes"),
                get_range(client, path, suffix, limit, answers.clone()),
            )
        })?;
        self.count_round(&round);
        Ok(tails
            .into_iter()
            .map(|t| {
                t.map(|t| Tail {
                    len: t.len,
                    bytes: Vec::from(t.bytes),
                })
            })
            .collect())
    }

    fn put(&self, key: &StoreKey, value: &[u8]) -> Result<()> {
        self.put_many(vec![(key.clone(), value.to_vec())])
    }

    fn put_many(&self, items: Vec<(StoreKey, Vec<u8>)>) -> Result<()> {
        let work = items
            .into_iter()
            .map(|(k, v)| Ok((self.object_path(k.as_str())?, PutPayload::from(v))))
            .collect::<Result<Vec<_>>>()?;
        self.run_many(work, |client, (path, payload)| {
            let what = format!("PUT {path}");
            (what, async move {
                client.put(&path, payload).await?;
                Ok(())
            })
        })?;
        Ok(())
    }

    /// Each object is uploaded as it is put ([`batch::stream_in`]), as many at once as the
    /// settings allow.
    fn put_streamed(&self, held: usize, produce: &Produce<'_>) -> Result<()> {
        let client = Arc::clone(&self.client);
        let timeout = self.transfer.timeout;
        let named = Arc::clone(&self.named);
        let upload = move |(path, value): (Path, Vec<u8>)| {
            let client = Arc::clone(&client);
            let named = Arc::clone(&named);
            async move {
                let what = format!("PUT {path}");
                let put = async move {
                    client.put(&path, PutPayload::from(value)).await?;
                    Ok(())
                };
                bounded(timeout, what, put)
                    .await
                    .map_err(|(what, f)| named.error(&what, f))
            }
        };
        batch::stream_in(
            held,
            self.transfer.concurrency,
            upload,
            |driven| runtime::run(driven).and_then(|uploaded| uploaded),
            &|put| produce(&|key, value| put((self.object_path(key.as_str())?, value))),
        )
    }

    fn delete(&self, key: &StoreKey) -> Result<()> {
        self.delete_many(std::slice::from_ref(key))
    }

    fn delete_prefix(&self, prefix: &StorePrefix) -> Result<()> {
        self.delete_many(&self.list_keys(prefix)?)
    }

    /// Bulk deletes (`DeleteObjects`, up to 1000 keys a request), one bounded batch at a time;
    /// where the service does not serve them, one DELETE per object from then on.
    fn delete_many(&self, keys: &[StoreKey]) -> Result<()> {
        let paths = self.object_paths(keys)?;
        let single = self.single_deletes.as_ref();
        if let Some(single) = single.filter(|s| s.in_use()) {
            return self.delete_one_by_one(single, paths);
        }
        for (n, batch) in paths.chunks(DELETE_BATCH).enumerate() {
            let client = Arc::clone(&self.client);
            let what = format!("DELETE {} objects from {}", batch.len(), batch[0]);
            let locations = batch.to_vec();
            match self.run(
                what,
                async move { Ok(delete_in_bulk(client, locations).await?) },
            ) {
                Ok(()) => {}
                Err(e) => match single {
                    Some(single) if refuses_bulk_delete(&e) => {
                        single.remember_refusal();
                        return self.delete_one_by_one(single, paths[n * DELETE_BATCH..].to_vec());
                    }
                    _ => return Err(e),
                },
            }
        }
        Ok(())
    }

    fn list_children(&self, prefix: &StorePrefix) -> Result<Vec<String>> {
        let web = self.named.service == Service::Http;
        if web && self.lists_by_index_page.load(Ordering::Relaxed) {
            let refused = Error::NoListing {
                store: self.named.described.clone(),
                why: format!("LIST {prefix}/: the server gave no WebDAV listing before"),
            };
            return self.index_page_children(prefix, refused);
        }
        let listed = match self.listing("", prefix, |client, at| async move {
            Ok(client.list_with_delimiter(at.as_ref()).await?)
        }) {
            Err(refused @ Error::NoListing { .. }) if web => {
                return self.index_page_children(prefix, refused);
            }
            listed => listed?,
        };
        // A web server without WebDAV may answer `PROPFIND` with 404, which the client takes
        // for an empty listing. Once one listing has found something the server lists, and an
        // empty directory is empty.
        let empty = listed.common_prefixes.is_empty() && listed.objects.is_empty();
        if !empty {
            self.listed_something.store(true, Ordering::Relaxed);
        } else if web && !self.listed_something.load(Ordering::Relaxed) {
            let refused = Error::NoListing {
                store: self.named.described.clone(),
                why: format!("LIST {prefix}/: the server found nothing to list"),
            };
            return self.index_page_children(prefix, refused);
        }
        let mut names: Vec<String> = listed
            .common_prefixes
            .iter()
            .chain(listed.objects.iter().map(|o| &o.location))
            .filter_map(|p| p.filename())
            .filter(|n| StoreKey::new(n).is_ok())
            .map(str::to_string)
            .collect();
        names.sort_unstable();
        names.dedup();
        Ok(names)
    }

    fn list_keys(&self, prefix: &StorePrefix) -> Result<Vec<StoreKey>> {
        let listed = self.listing(" (recursive)", prefix, |client, at| async move {
            Ok(client
                .list(at.as_ref())
                .map_ok(|meta| meta.location)
                .try_collect::<Vec<Path>>()
                .await?)
        })?;
        let mut keys: Vec<StoreKey> = listed.iter().filter_map(|p| self.key_of(p)).collect();
        keys.sort_unstable();
        Ok(keys)
    }

    fn allow_objects_up_to(&self, bytes: u64) {
        self.limit.allow(bytes);
    }

    fn listings_hide_dot_files(&self) -> bool {
        self.lists_by_index_page.load(Ordering::Relaxed)
    }

    fn describe(&self) -> String {
        self.named.described.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A round of ranged GETs the server served none of means it serves no ranges; rounds
    /// with some served (a cache's misses among its hits) take two.
    #[test]
    fn servers_are_known_to_serve_no_ranges_by_their_rounds() {
        let store = || {
            RemoteStore::new(
                Service::Http,
                Arc::new(object_store::memory::InMemory::new()),
                String::new(),
                Transfer::from_env(&|_| None).unwrap(),
                "none".into(),
                "memory".into(),
            )
        };
        let round = |served: bool, refused: bool| RangeAnswers {
            served: AtomicBool::new(served),
            refused: AtomicBool::new(refused),
        };
        let key = StoreKey::new("a").unwrap();
        let all_refused = store();
        all_refused.count_round(&round(false, true));
        assert!(!all_refused.reads_runs_in_place(&key));
        let mixed = store();
        mixed.count_round(&round(true, true));
        mixed.count_round(&round(true, false));
        assert!(mixed.reads_runs_in_place(&key), "one round with misses");
        mixed.count_round(&round(true, true));
        assert!(!mixed.reads_runs_in_place(&key), "two rounds with misses");
    }

    #[test]
    fn web_servers_refuse_listings_by_these_answers() {
        let named = |service| Named {
            service,
            described: "http://h/x".into(),
            credentials_source: "none".into(),
        };
        let web = |why: &str| Error::Web {
            store: "http://h/x".into(),
            why: why.into(),
        };
        let http = named(Service::Http);
        for refused in [
            "LIST x/: Server returned non-2xx status code: 501 Not Implemented: <!DOCTYPE HTML>",
            "LIST x/: Server returned non-2xx status code: 405 Method Not Allowed",
            "LIST x/: Error decoding PROPFIND response: missing field",
        ] {
            match http.listing_error(web(refused)) {
                Error::NoListing { why, .. } => assert!(!why.contains("DOCTYPE"), "{why}"),
                other => panic!("{refused}: {other:?}"),
            }
        }
        assert!(matches!(
            http.listing_error(Error::Auth("403 Forbidden".into())),
            Error::NoListing { .. }
        ));
        let passing = "LIST x/: Server returned non-2xx status code: 503 Service Unavailable";
        assert!(matches!(
            http.listing_error(web(passing)),
            Error::Web { .. }
        ));
        let s3 = named(Service::S3);
        assert!(matches!(
            s3.listing_error(Error::Auth("403".into())),
            Error::Auth(_)
        ));
    }

    #[test]
    fn limits_come_from_the_environment() {
        let from = |vars: &[(&str, &str)]| {
            let vars: Vec<(String, String)> = vars
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            Transfer::from_env(&move |k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))
        };
        assert_eq!(
            from(&[]).unwrap(),
            Transfer {
                concurrency: DEFAULT_CONCURRENCY,
                timeout: DEFAULT_TIMEOUT,
                retries: DEFAULT_RETRIES
            }
        );
        let set = [
            (CONCURRENCY_ENV, "3"),
            (TIMEOUT_ENV, "0.5"),
            (RETRIES_ENV, "0"),
        ];
        assert_eq!(
            from(&set).unwrap(),
            Transfer {
                concurrency: 3,
                timeout: Duration::from_millis(500),
                retries: 0
            }
        );
        for (k, v) in [
            (CONCURRENCY_ENV, "0"),
            (CONCURRENCY_ENV, "many"),
            (TIMEOUT_ENV, "-1"),
            (TIMEOUT_ENV, "NaN"),
            (RETRIES_ENV, "1000"),
        ] {
            assert!(matches!(from(&[(k, v)]), Err(Error::Invalid(_))), "{k}={v}");
        }
    }

    /// Spans of one object count as one version only when every GET saw the same length and
    /// the same known ETag (or all found it absent).
    #[test]
    fn spans_agree_only_on_one_known_version() {
        let span = |len: u64, version: Option<&str>| {
            Some(Spanned {
                len,
                bytes: Bytes::new(),
                version: version.map(str::to_string),
            })
        };
        assert!(one_version(&[]));
        assert!(one_version(&[span(8, None)]), "one GET is atomic");
        assert!(one_version(&[None, None]));
        assert!(one_version(&[span(8, Some("a")), span(8, Some("a"))]));
        assert!(!one_version(&[span(8, Some("a")), span(8, Some("b"))]));
        assert!(!one_version(&[span(8, Some("a")), span(9, Some("a"))]));
        assert!(!one_version(&[span(8, None), span(8, None)]), "unknown");
        assert!(!one_version(&[span(8, Some("a")), None]));
        assert!(!one_version(&[None, span(8, Some("a"))]));
    }
}
