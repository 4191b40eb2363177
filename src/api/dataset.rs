//! An open dataset: its tree, its store, its modes, and the life cycle calls (create, open,
//! redef, enddef, sync, abort, close).
//!
//! Metadata is written whole-object at `enddef`, `sync` and `close`, and only the objects
//! whose bytes changed; arrays before the groups that list them, `.zmetadata` last, so a
//! reader never finds a group naming an array that has no `.zarray`.

use crate::api::data::read_ahead::ReadAhead;
use crate::chunk::cache::ChunkCache;
use crate::error::{Error, Result};
use crate::format::{self, Layout};
use crate::model::{GroupId, Tree};
use crate::url::{DatasetUrl, Flavor};
use crate::zmap::{self, OpenHow, Store, StoreKey};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// How to create a dataset (decoded from netCDF's cmode bits by the caller).
#[derive(Debug, Clone, Copy, Default)]
pub struct CreateOptions {
    pub clobber: bool,
    pub classic_model: bool,
    /// `NC_DISKLESS` without `NC_PERSIST`: the dataset lives in memory only.
    pub diskless: bool,
}

/// An open dataset.
#[derive(Debug)]
pub struct Dataset {
    pub tree: Tree,
    pub(crate) store: Arc<dyn Store>,
    pub layout: Layout,
    pub writable: bool,
    pub(crate) read_only_reason: Option<String>,
    pub define_mode: bool,
    /// Created, and not out of define mode since (`nc_abort` then removes it).
    pub creating: bool,
    /// The tree as stored when define mode was entered on a stored dataset: `nc_abort` in
    /// define mode goes back to it.
    tree_before_define: Option<Tree>,
    /// `nc_set_fill(NC_NOFILL)` is in force for new variables.
    pub nofill_default: bool,
    /// `_NCProperties`: as the root's `.zattrs` holds it (in either layout), or as we write it
    /// into a new NCZarr dataset; `None` when the dataset carries none (netcdf-c then answers
    /// neither it nor a `_SuperblockVersion` other than 0).
    pub ncproperties: Option<String>,
    /// Bytes of every metadata object as last written or read (to write only changes).
    written: HashMap<String, Arc<[u8]>>,
    /// Variables' metadata objects as last built (built again only when changed).
    metadata_memo: format::write::VarObjectsMemo,
    /// Per-variable chunk caches, keyed by (group, varid).
    pub(crate) caches: HashMap<(usize, usize), ChunkCache>,
    /// Per-variable read-ahead of chunks read in sequence (datasets opened read-only).
    pub(crate) read_ahead: HashMap<(usize, usize), ReadAhead>,
    /// Store paths of groups as they are on disk (for renames).
    group_paths: HashMap<usize, String>,
}

impl Dataset {
    fn new(store: Box<dyn Store>, tree: Tree, layout: Layout, writable: bool) -> Dataset {
        Dataset {
            tree,
            store: Arc::from(store),
            layout,
            writable,
            read_only_reason: None,
            define_mode: false,
            creating: false,
            tree_before_define: None,
            nofill_default: false,
            ncproperties: layout.nczarr.then(|| format::write::ncproperties(layout)),
            written: HashMap::new(),
            metadata_memo: Default::default(),
            caches: HashMap::new(),
            read_ahead: HashMap::new(),
            group_paths: HashMap::new(),
        }
    }

    /// In tests: a new, writable NCZarr dataset over `store`, in define mode.
    #[cfg(test)]
    pub(crate) fn creating_over(store: Box<dyn Store>) -> Dataset {
        let layout = Layout {
            nczarr: true,
            xarray: false,
            consolidated: false,
            zarr_v3: false,
        };
        let mut ds = Dataset::new(store, Tree::new(), layout, true);
        ds.define_mode = true;
        ds.creating = true;
        ds
    }

    fn layout_for(url: &DatasetUrl) -> Layout {
        Layout {
            nczarr: url.flavor() == Flavor::NcZarr,
            xarray: url.xarray_dims(),
            consolidated: url.consolidated(),
            zarr_v3: url.zarr_v3(),
        }
    }

    /// Creates a new dataset at `url` and enters define mode.
    pub fn create(url: &DatasetUrl, opts: CreateOptions) -> Result<Dataset> {
        let how = OpenHow::Create {
            clobber: opts.clobber,
        };
        let store = if opts.diskless {
            zmap::open_diskless(url, how)?
        } else {
            zmap::open_store(url, how)?
        };
        let mut ds = Dataset::new(store, Tree::new(), Self::layout_for(url), true);
        ds.define_mode = true;
        ds.creating = true;
        ds.tree.classic_model = opts.classic_model;
        ds.write_metadata()?;
        Ok(ds)
    }

    /// Opens an existing dataset.
    pub fn open(url: &DatasetUrl, writable: bool) -> Result<Dataset> {
        Self::open_with(url, writable, false)
    }

    /// Opens an existing dataset; `diskless` (`NC_DISKLESS` without `NC_PERSIST`) keeps every
    /// change in memory, leaving the stored dataset as it was.
    pub fn open_with(url: &DatasetUrl, writable: bool, diskless: bool) -> Result<Dataset> {
        let how = OpenHow::Open { writable };
        let store = if diskless {
            zmap::open_diskless(url, how)?
        } else {
            zmap::open_store(url, how)?
        };
        Self::open_over(
            store,
            Self::layout_for(url),
            writable,
            &lone_array_name(url),
        )
    }

    /// Opens the dataset that an open `store` holds, read as `wanted` asks (pure Zarr unless
    /// `wanted.nczarr`); a store that is a single array is a dataset of that one variable,
    /// named `lone_array`.
    pub fn open_over(
        store: Box<dyn Store>,
        wanted: Layout,
        writable: bool,
        lone_array: &str,
    ) -> Result<Dataset> {
        let opened = format::read::read_dataset_as(
            store.as_ref(),
            !wanted.nczarr,
            wanted.xarray,
            writable,
            lone_array,
        )?;
        let layout = Layout {
            nczarr: opened.layout.nczarr,
            xarray: wanted.xarray,
            consolidated: wanted.consolidated || opened.has_zmetadata,
            zarr_v3: opened.layout.zarr_v3,
        };
        let mut tree = opened.tree;
        tree.list_record_types();
        let mut ds = Dataset::new(store, tree, layout, writable);
        ds.read_only_reason = opened.read_only_reason;
        ds.ncproperties = opened.ncproperties;
        ds.remember_paths();
        if ds.writable && ds.read_only_reason.is_none() {
            // The store holds the metadata of this tree already: only objects the model
            // changes are written (foreign formatting survives otherwise). Consolidated metadata
            // the user asked for but the store lacks is written at the first sync.
            let missing = ds.layout.consolidated && !opened.has_zmetadata;
            let carrier = format::write::consolidated_key(ds.layout);
            let objects = format::write::metadata_objects(
                &ds.tree,
                ds.layout,
                &mut ds.metadata_memo,
                format::write::Built::All,
            );
            for (k, v) in objects {
                if !(missing && k == carrier) {
                    ds.written.insert(k, v);
                }
            }
            ds.metadata_memo.all_stored();
        }
        Ok(ds)
    }

    fn remember_paths(&mut self) {
        for g in self.tree.groups_preorder() {
            self.group_paths.insert(g.0, self.tree.group_path(g));
        }
    }

    /// Fails with `ReadOnly` unless the dataset may be modified.
    pub fn check_writable(&self) -> Result<()> {
        if !self.writable {
            return Err(Error::ReadOnly);
        }
        if let Some(why) = &self.read_only_reason {
            return Err(Error::ReadOnlyLayout(format!(
                "{}: {why}; copy it to write",
                self.store.describe()
            )));
        }
        Ok(())
    }

    /// Enters define mode (`nc_redef`).
    pub fn redef(&mut self) -> Result<()> {
        self.check_writable()?;
        if self.define_mode {
            return Err(Error::InDefine);
        }
        self.enter_define_mode()
    }

    /// Enters define mode on a dataset out of it, remembering the tree (values written so far
    /// included) for `nc_abort` to go back to.
    fn enter_define_mode(&mut self) -> Result<()> {
        self.tree_before_define = Some(self.tree.clone());
        self.define_mode = true;
        Ok(())
    }

    /// Leaves define mode (`nc_enddef`): writes metadata.
    pub fn enddef(&mut self) -> Result<()> {
        if !self.define_mode {
            return Err(Error::NotInDefine);
        }
        self.leave_define_mode(true)
    }

    /// Ends define mode: every compound type defined takes no more fields and every enum
    /// type no more members (netCDF commits them; an enum type without members is
    /// `NC_EINVAL`), and the definitions are stored; committed too (a zip archive completed
    /// and renamed over the old one) when `commit`, as `nc_enddef` and `nc_sync` do. Leaving
    /// define mode for a data call does not commit: programs that write one variable at a
    /// time (netCDF4-python, xarray) leave it once per variable, and committing a zip archive
    /// copies every entry of it; `nc_sync` and `nc_close` commit.
    fn leave_define_mode(&mut self, commit: bool) -> Result<()> {
        self.tree.types.check_enums_have_members()?;
        self.define_mode = false;
        self.creating = false;
        self.tree_before_define = None;
        self.tree.types.close_all();
        if commit {
            self.sync_all()
        } else {
            self.store_changes()
        }
    }

    /// Enters data mode automatically, as netCDF-4 does for data calls in define mode.
    pub fn ensure_data_mode(&mut self) -> Result<()> {
        if self.define_mode {
            if self.tree.classic_model {
                return Err(Error::InDefine);
            }
            self.leave_define_mode(false)?;
        }
        Ok(())
    }

    /// Enters define mode automatically, as netCDF-4 does for definitions in data mode.
    pub fn ensure_define_mode(&mut self) -> Result<()> {
        self.check_writable()?;
        if !self.define_mode {
            if self.tree.classic_model {
                return Err(Error::NotInDefine);
            }
            self.enter_define_mode()?;
        }
        Ok(())
    }

    /// `nc_sync`: flushes chunks and metadata.
    pub fn sync(&mut self) -> Result<()> {
        if !self.writable {
            return Ok(());
        }
        if self.define_mode {
            return self.enddef();
        }
        self.sync_all()
    }

    /// Stores every change (chunks, then metadata) and commits the store.
    fn sync_all(&mut self) -> Result<()> {
        if !self.writable || self.read_only_reason.is_some() {
            return Ok(());
        }
        self.store_changes()?;
        self.store.flush()
    }

    /// Stores every change, chunks then metadata, without committing the store.
    fn store_changes(&mut self) -> Result<()> {
        if !self.writable || self.read_only_reason.is_some() {
            return Ok(());
        }
        self.flush_chunks()?;
        self.write_metadata()
    }

    /// `nc_close`.
    pub fn close(mut self) -> Result<()> {
        self.store_for_close()
    }

    /// What closing stores (leaving define mode, every change), without giving the dataset
    /// up: when it fails, the dataset is still open with its unsaved changes, and closing can
    /// be tried again (netcdf-c keeps a dataset open when its close fails) or aborted.
    pub fn store_for_close(&mut self) -> Result<()> {
        if self.writable && self.read_only_reason.is_none() {
            // As `nc_enddef`: no enum type without members is stored (netCDF-4 files fail to
            // close so too).
            self.tree.types.check_enums_have_members()?;
            self.define_mode = false;
            self.sync_all()?;
        }
        Ok(())
    }

    /// `nc_abort`: a dataset created and not out of define mode since is removed; otherwise
    /// the definitions made since define mode was entered are dropped and everything else is
    /// stored, as closing does (netCDF files keep the data written before an abort).
    pub fn abort(mut self) -> Result<()> {
        if !self.writable {
            return Ok(());
        }
        if self.creating {
            return self.store.discard();
        }
        if let Some(tree) = self.tree_before_define.take() {
            self.tree = tree;
        }
        self.store_for_close()
    }

    /// Writes every metadata object whose bytes changed: the objects of renamed groups and
    /// variables are copied to their new paths first and deleted from the old ones last.
    pub fn write_metadata(&mut self) -> Result<()> {
        let copied = self.copy_renamed()?;
        // Objects the store holds already are left out, unless renames copied objects: then
        // every object is listed, so that none just written is deleted with the copies' sources
        // (a new variable may take a renamed group's old name).
        let which = if copied.is_empty() {
            format::write::Built::Changed
        } else {
            format::write::Built::All
        };
        let objects = format::write::metadata_objects(
            &self.tree,
            self.layout,
            &mut self.metadata_memo,
            which,
        );
        // An object built again compares its bytes; one reused is the very buffer written
        // (each new buffer is remembered, so the next build that reuses it compares nothing).
        let new_buffer: Vec<bool> = objects
            .iter()
            .map(|(k, v)| self.written.get(k).is_none_or(|w| !Arc::ptr_eq(w, v)))
            .collect();
        let mut changed: Vec<(StoreKey, Vec<u8>)> = objects
            .iter()
            .zip(&new_buffer)
            .filter(|((k, v), new)| **new && self.written.get(k).is_none_or(|w| w != v))
            .map(|((k, v), _)| Ok((StoreKey::new(k)?, v.to_vec())))
            .collect::<Result<_>>()?;
        // Deepest first: arrays before the groups listing them; .zmetadata last.
        changed.sort_by_cached_key(|(k, _)| {
            let k = k.as_str();
            (k == ".zmetadata", std::cmp::Reverse(k.matches('/').count()))
        });
        let attempted: Vec<StoreKey> = changed.iter().map(|(k, _)| k.clone()).collect();
        if let Err(e) = self.store.put_many(changed) {
            // Some may be stored (objects are written concurrently): each is written again
            // next time, whatever the metadata then is (nc_abort goes back to older metadata).
            self.forget_written(&attempted);
            self.drop_copies(copied);
            return Err(e);
        }
        let now_written: HashSet<String> = if copied.is_empty() {
            HashSet::new()
        } else {
            objects.iter().map(|(k, _)| k.clone()).collect()
        };
        for ((k, v), new) in objects.into_iter().zip(new_buffer) {
            if new {
                self.written.insert(k, v);
            }
        }
        self.metadata_memo.all_stored();
        self.set_stored_paths(true);
        self.remember_paths();
        self.delete_copied(copied, &now_written)
    }

    /// Records that every stored group and variable now has its objects where its name says
    /// (they were moved there), here and in the tree `nc_abort` would go back to.
    pub(crate) fn objects_moved_in_place(&mut self) {
        self.set_stored_paths(false);
        self.remember_paths();
        if let Some(before) = self.tree_before_define.as_mut() {
            for (group, now) in before.groups.iter_mut().zip(&self.tree.groups) {
                for (var, moved) in group.vars.iter_mut().zip(&now.vars) {
                    if var.stored_path != moved.stored_path {
                        Arc::make_mut(var)
                            .stored_path
                            .clone_from(&moved.stored_path);
                    }
                }
            }
        }
    }

    /// Records that each variable's objects are where its name says: every variable's when
    /// `all`, else those stored already. Only variables whose stored path changes are
    /// touched: the others stay shared with the copies that hold them.
    fn set_stored_paths(&mut self, all: bool) {
        for g in self.tree.groups_preorder() {
            let path = self.tree.group_path(g);
            for v in &mut self.tree.group_mut(g).vars {
                let moved = match v.stored_path.as_deref() {
                    Some(p) => !format::write::is_prefixed(p, &path, &v.name),
                    None => all,
                };
                if moved {
                    Arc::make_mut(v).stored_path = Some(format::write::prefixed(&path, &v.name));
                }
            }
        }
    }

    /// Where group `g`'s objects are stored, when it has been stored.
    pub(crate) fn stored_group_path(&self, g: GroupId) -> Option<String> {
        self.group_paths.get(&g.0).cloned()
    }

    /// Forgets what was written at `keys` (deleted), so that an object written there again
    /// with the same bytes is written; the memo's objects are compared with what was written
    /// again, since any of them may be among those keys.
    pub(crate) fn forget_written(&mut self, keys: &[StoreKey]) {
        for k in keys {
            self.written.remove(k.as_str());
        }
        self.metadata_memo.none_stored();
    }

    /// The group of this index, if the dataset has one.
    pub fn group_id(&self, g: usize) -> Option<GroupId> {
        (g < self.tree.groups.len()).then_some(GroupId(g))
    }

    /// Validates a variable id of a group.
    pub fn var_index(&self, g: GroupId, varid: i32) -> Result<usize> {
        usize::try_from(varid)
            .ok()
            .filter(|v| *v < self.tree.group(g).vars.len())
            .ok_or_else(|| Error::NotVar(format!("varid {varid}")))
    }
}

/// The name of the variable of a dataset at `url` that is a single Zarr array: the last part of
/// its path without a `.zip` or `.zarr` ending (`temperature` for `.../temperature.zarr`), as
/// far as it is a netCDF name; else [`format::read::LONE_ARRAY`].
fn lone_array_name(url: &DatasetUrl) -> String {
    let last = url.path.rsplit('/').find(|p| !p.is_empty()).unwrap_or("");
    let stem = [".zip", ".zarr"].iter().fold(last, |name, ending| {
        name.strip_suffix(ending).unwrap_or(name)
    });
    match crate::api::names::check(stem) {
        Ok(()) => stem.to_string(),
        Err(_) => format::read::LONE_ARRAY.to_string(),
    }
}
