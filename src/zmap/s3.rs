//! S3: the client for one bucket of any S3-compatible service, and the rules for creating a
//! dataset there. Reads, writes and listings are [`RemoteStore`]'s; how bucket, endpoint,
//! region and credentials are found is [`settings`]. It knows nothing of Zarr beyond the names
//! of the top-level metadata objects that make a prefix safe to clobber.

mod assume;
mod chain;
mod credentials;
mod process;
pub mod profiles;
mod renewing;
pub mod settings;
mod sso;

use super::remote::single_deletes::SingleDeletes;
use super::remote::{RemoteStore, Service};
use super::{Store, StorePrefix, ZARR_MARKERS};
use crate::error::{Error, Result};
use object_store::ObjectStore;
use object_store::aws::AmazonS3Builder;
use settings::{Credentials, S3Settings};
use std::sync::Arc;

/// The client for `s`, and how it deletes where the service refuses bulk deletes; `s` then
/// says how their requests are signed.
fn build_clients(s: &mut S3Settings) -> Result<(Arc<dyn ObjectStore>, SingleDeletes)> {
    let (options, retry) = s.transfer.client_config();
    let mut builder = AmazonS3Builder::new()
        .with_bucket_name(&s.bucket)
        .with_region(&s.region)
        .with_retry(retry)
        .with_client_options(options)
        .with_virtual_hosted_style_request(false);
    if let Some(endpoint) = &s.endpoint {
        builder = builder.with_endpoint(endpoint);
    }
    let (builder, anonymous_instead) = credentials::sign(
        builder,
        &s.credentials,
        &s.credentials_source,
        s.transfer.timeout,
    )?;
    if let Some(why) = anonymous_instead {
        s.credentials = Credentials::Anonymous;
        s.credentials_source = format!("anonymous ({why})");
    }
    let url = describe(s);
    let built = move |builder: AmazonS3Builder| -> Result<Arc<dyn ObjectStore>> {
        let client = builder.build().map_err(|e| Error::Url {
            url: url.clone(),
            why: e.to_string(),
        })?;
        Ok(Arc::new(client))
    };
    let client = built(builder.clone())?;
    let single = builder.with_disable_bulk_delete(true);
    // Refusals are remembered per bucket: the same endpoint may route buckets to different
    // services.
    let bucket = match &s.endpoint {
        Some(endpoint) => format!("{endpoint} {}", s.bucket),
        None => format!("AWS {} {}", s.region, s.bucket),
    };
    let single_deletes = SingleDeletes::new(
        bucket,
        s.is_google(),
        Box::new(move || built(single.clone())),
    );
    Ok((client, single_deletes))
}

fn describe(s: &S3Settings) -> String {
    let at = match &s.endpoint {
        Some(e) => format!(" at {e}"),
        None => format!(" (AWS {})", s.region),
    };
    if s.root.is_empty() {
        format!("s3://{}{at}", s.bucket)
    } else {
        format!("s3://{}/{}{at}", s.bucket, s.root)
    }
}

/// Opens the dataset prefix. No request is made of the bucket: whether a dataset is there
/// is found by the first reads (a missing bucket or an empty prefix is
/// [`Error::NotFound`]). Credentials that come from a service (STS, a container's agent,
/// the instance metadata service) are fetched here.
pub fn open(mut settings: S3Settings) -> Result<RemoteStore> {
    let (client, single_deletes) = build_clients(&mut settings)?;
    Ok(RemoteStore::new(
        Service::S3,
        client,
        settings.root.clone(),
        settings.transfer,
        settings.credentials_source.clone(),
        describe(&settings),
    )
    .deleting_one_by_one_where_refused(single_deletes))
}

/// Prepares the prefix for a new dataset.
///
/// - nothing below the prefix: used as is (the bucket must exist: else [`Error::NotFound`]);
/// - objects below it: without `clobber`, [`Error::Exists`]; with `clobber`, every object
///   below it is deleted **only if it looks like a Zarr or NCZarr dataset** (one of
///   `.zgroup`, `.zarray`, `.zattrs`, `.zmetadata`, `.nczarr`, `zarr.json` at its top);
///   any other prefix is refused with [`Error::Exists`].
pub fn create(settings: S3Settings, clobber: bool) -> Result<RemoteStore> {
    let store = open(settings)?;
    let children = store.list_children(&StorePrefix::root())?;
    if !children.is_empty() {
        if !clobber {
            return Err(Error::Exists(store.describe()));
        }
        if !children.iter().any(|c| ZARR_MARKERS.contains(&c.as_str())) {
            return Err(Error::Exists(format!(
                "{} (holds objects but no Zarr dataset; refusing to clobber it)",
                store.describe()
            )));
        }
        store.delete_prefix(&StorePrefix::root())?;
    }
    Ok(store)
}
