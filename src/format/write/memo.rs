//! The metadata objects of each variable as last built, reused while what they are built from
//! is unchanged.
//!
//! netCDF4-python and xarray write a dataset one variable at a time, each define mode left to
//! write its values, and every define mode left stores the metadata: building the objects of
//! every variable each time made writing n variables cost n² object builds. A variable's
//! objects (Zarr v2: `.zarray` and `.zattrs`) are built from the variable itself, the names,
//! full names and lengths of its dimensions, its path and the layout; an entry is reused only
//! while all of these compare equal. An unchanged variable is the very one the entry holds
//! (variables are copied when changed), and the dimensions are compared once per build, so a
//! build's check of an unchanged variable is a pointer comparison. Variables of user-defined types, or with attributes of
//! them, also depend on the dataset's type definitions and are always built again.
//!
//! Knows nothing of stores; [`super::metadata_objects`] decides what is built.

use super::super::Layout;
use crate::model::{Tree, Var};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// One variable's metadata objects: key, JSON and the bytes written.
pub(super) type VarObjects = Vec<(String, Value, Arc<[u8]>)>;

/// Each dimension's full name and length, by dimension id: what a variable's objects take of
/// its dimensions, worked out once per build.
#[derive(Debug, Default, PartialEq)]
pub(super) struct DimKeys(Vec<(String, u64)>);

impl DimKeys {
    pub(super) fn of(tree: &Tree) -> DimKeys {
        DimKeys(
            (0..tree.dims.len())
                .map(|d| {
                    let id = crate::model::DimId(d);
                    (tree.dim_fqn(id), tree.dim(id).len)
                })
                .collect(),
        )
    }
}

/// What a variable's objects were built from, besides its group's path (the key of the
/// entries it is in).
#[derive(Debug)]
struct Inputs {
    /// The variable as built: the tree's own while it is unchanged ([`Tree::var_mut`] copies
    /// a variable shared so), so the same pointer means the same variable.
    var: Arc<Var>,
    /// Each dimension's full name and length.
    dims: Vec<(String, u64)>,
    /// The dimensions' epoch ([`VarObjectsMemo::start_build`]) in which `dims` last matched
    /// the dataset's: while it is the current one, they still do.
    dims_epoch: u64,
    layout: Layout,
}

impl Inputs {
    fn same(&self, var: &Arc<Var>, dims: &DimKeys, epoch: u64, layout: Layout) -> bool {
        self.layout == layout
            && (Arc::ptr_eq(&self.var, var) || *self.var == **var)
            && (self.dims_epoch == epoch
                || (self.dims.len() == var.dims.len()
                    && self
                        .dims
                        .iter()
                        .zip(&var.dims)
                        .all(|(had, d)| *had == dims.0[d.0])))
    }

    /// Records that these inputs are `var`'s over the dimensions of `epoch`: an equal copy
    /// of the variable is replaced by the tree's own, compared by pointer next time.
    fn refresh(&mut self, var: &Arc<Var>, epoch: u64) {
        self.dims_epoch = epoch;
        if !Arc::ptr_eq(&self.var, var) {
            self.var = Arc::clone(var);
        }
    }
}

#[derive(Debug)]
struct Entry {
    inputs: Inputs,
    objects: VarObjects,
    /// Whether the last build visited this entry (entries of variables gone are dropped).
    seen: bool,
    /// Whether the store holds these very objects ([`VarObjectsMemo::all_stored`]).
    stored: bool,
}

impl Entry {
    fn built(
        var: &Arc<Var>,
        dims: &DimKeys,
        epoch: u64,
        layout: Layout,
        objects: VarObjects,
    ) -> Entry {
        Entry {
            inputs: Inputs {
                var: Arc::clone(var),
                dims: var.dims.iter().map(|d| dims.0[d.0].clone()).collect(),
                dims_epoch: epoch,
                layout,
            },
            objects,
            seen: true,
            stored: false,
        }
    }
}

/// Variables' objects by their group's path, then their place in the group.
#[derive(Debug, Default)]
pub struct VarObjectsMemo {
    groups: HashMap<String, Vec<Option<Entry>>>,
    /// The dimensions of the build under way, and their epoch: it changes with them.
    dims: DimKeys,
    epoch: u64,
}

/// The entries of one group's variables, for one build.
pub(super) struct GroupMemo<'a> {
    vars: &'a mut Vec<Option<Entry>>,
    dims: &'a DimKeys,
    epoch: u64,
}

/// True when `var`'s objects depend on nothing of the tree but its dimensions (no
/// user-defined type is involved).
pub(super) fn memoizable(var: &Var) -> bool {
    var.record.is_none()
        && var.enum_type.is_none()
        && var.vlen.is_none()
        && var.atts.iter().all(|a| a.user_type.is_none())
}

impl VarObjectsMemo {
    /// Starts a build over dimensions `dims` (a new epoch when they changed).
    pub(super) fn start_build(&mut self, dims: DimKeys) {
        if dims != self.dims {
            self.dims = dims;
            self.epoch += 1;
        }
    }

    /// The entries of the variables of the group at `path`.
    pub(super) fn group(&mut self, path: &str) -> GroupMemo<'_> {
        GroupMemo {
            vars: self.groups.entry(path.to_string()).or_default(),
            dims: &self.dims,
            epoch: self.epoch,
        }
    }

    /// Drops the entries the build just finished did not visit, and starts the next.
    pub(super) fn finish_build(&mut self) {
        for vars in self.groups.values_mut() {
            for slot in vars.iter_mut() {
                if slot.as_mut().is_some_and(|e| !std::mem::take(&mut e.seen)) {
                    *slot = None;
                }
            }
            while vars.last().is_some_and(Option::is_none) {
                vars.pop();
            }
        }
        self.groups.retain(|_, vars| !vars.is_empty());
    }

    /// Records that the store holds the objects of every entry (of the last build): the
    /// caller stored those that changed. An entry built again holds objects not stored yet.
    pub fn all_stored(&mut self) {
        for entry in self.entries_mut() {
            entry.stored = true;
        }
    }

    /// Records that the store may not hold the objects of any entry (some were moved or may
    /// be half written): each is given again, to be compared with what was written.
    pub fn none_stored(&mut self) {
        for entry in self.entries_mut() {
            entry.stored = false;
        }
    }

    fn entries_mut(&mut self) -> impl Iterator<Item = &mut Entry> {
        self.groups.values_mut().flatten().flatten()
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.groups.values().flatten().flatten().count()
    }
}

impl GroupMemo<'_> {
    /// The objects of `var` (one [`memoizable`]), variable `index` of this group: the ones
    /// built last time when nothing they are built from changed, else those `build` gives,
    /// remembered for next time; and whether the store holds them
    /// ([`VarObjectsMemo::all_stored`]).
    pub(super) fn objects(
        &mut self,
        index: usize,
        var: &Arc<Var>,
        layout: Layout,
        build: impl FnOnce() -> VarObjects,
    ) -> (&VarObjects, bool) {
        if self.vars.len() <= index {
            self.vars.resize_with(index + 1, || None);
        }
        let slot = &mut self.vars[index];
        let entry = match slot.take() {
            Some(e) if e.inputs.same(var, self.dims, self.epoch, layout) => slot.insert(e),
            _ => slot.insert(Entry::built(var, self.dims, self.epoch, layout, build())),
        };
        entry.inputs.refresh(var, self.epoch);
        entry.seen = true;
        (&entry.objects, entry.stored)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Built, VarObjectsMemo, metadata_objects};
    use crate::format::Layout;
    use crate::model::{Att, DimId, NcType, Tree, Values, Var};

    /// A change to a tree, and what it is.
    type Change = (&'static str, Box<dyn Fn(&mut Tree)>);

    fn layouts() -> Vec<Layout> {
        let mut all = Vec::new();
        for nczarr in [false, true] {
            for consolidated in [false, true] {
                all.push(Layout {
                    nczarr,
                    xarray: true,
                    consolidated,
                    zarr_v3: false,
                });
            }
        }
        all
    }

    /// After each change, the objects built with the memo kept from the builds before are
    /// those a build from nothing gives.
    #[test]
    fn reused_objects_are_those_a_fresh_build_gives() {
        for layout in layouts() {
            let mut tree = Tree::new();
            let x = tree.add_dim(Tree::ROOT, "x", 4, true);
            let y = tree.add_dim(Tree::ROOT, "y", 3, false);
            for name in ["a", "b"] {
                let mut var = Var::new(name, NcType::Int, vec![x, y]);
                var.chunks = vec![1, 3];
                tree.group_mut(Tree::ROOT).vars.push(var.into());
            }
            let mut memo = VarObjectsMemo::default();
            let changes: Vec<Change> = vec![
                ("nothing", Box::new(|_| {})),
                (
                    "an unlimited dimension grows",
                    Box::new(move |t| t.dims[x.0].len = 9),
                ),
                (
                    "a dimension is renamed",
                    Box::new(move |t| t.dims[y.0].name = "z".into()),
                ),
                (
                    "an attribute is added",
                    Box::new(|t| {
                        let att = Att::new("units", Values::text("m"));
                        t.var_mut(Tree::ROOT, 1).atts.push(att);
                    }),
                ),
                (
                    "a variable is renamed",
                    Box::new(|t| t.var_mut(Tree::ROOT, 0).name = "c".into()),
                ),
                (
                    "a variable is added",
                    Box::new(|t| {
                        let var = Var::new("d", NcType::Double, vec![DimId(1)]);
                        t.group_mut(Tree::ROOT).vars.push(var.into());
                    }),
                ),
                (
                    "a variable is removed",
                    Box::new(|t| {
                        t.group_mut(Tree::ROOT).vars.remove(1);
                    }),
                ),
            ];
            for (what, change) in changes {
                change(&mut tree);
                let memoized = metadata_objects(&tree, layout, &mut memo, Built::All);
                let fresh =
                    metadata_objects(&tree, layout, &mut VarObjectsMemo::default(), Built::All);
                assert_eq!(memoized, fresh, "{what} ({layout:?})");
            }
            assert_eq!(memo.len(), 2, "entries of variables gone are dropped");
        }
    }

    /// Once the store holds the objects built, a build of what changed leaves out the objects
    /// of every variable not built again, and gives them all again once the store may not
    /// hold them.
    #[test]
    fn objects_the_store_holds_are_left_out_of_builds_of_changes() {
        for layout in layouts() {
            let mut tree = Tree::new();
            let x = tree.add_dim(Tree::ROOT, "x", 4, false);
            for name in ["a", "b", "c"] {
                let var = Var::new(name, NcType::Int, vec![x]);
                tree.group_mut(Tree::ROOT).vars.push(var.into());
            }
            let keys = |objects: Vec<(String, std::sync::Arc<[u8]>)>| -> Vec<String> {
                objects
                    .into_iter()
                    .map(|(k, _)| k)
                    .filter(|k| k.contains('/'))
                    .collect()
            };
            let mut memo = VarObjectsMemo::default();
            let all = keys(metadata_objects(&tree, layout, &mut memo, Built::Changed));
            assert_eq!(all.len(), 6, "{all:?} ({layout:?})");
            memo.all_stored();
            let unchanged = keys(metadata_objects(&tree, layout, &mut memo, Built::Changed));
            assert!(unchanged.is_empty(), "{unchanged:?} ({layout:?})");
            tree.var_mut(Tree::ROOT, 1)
                .atts
                .push(Att::new("units", Values::text("m")));
            let changed = keys(metadata_objects(&tree, layout, &mut memo, Built::Changed));
            assert!(
                !changed.is_empty() && changed.iter().all(|k| k.starts_with("b/")),
                "{changed:?} ({layout:?})"
            );
            assert_eq!(
                keys(metadata_objects(&tree, layout, &mut memo, Built::All)).len(),
                6
            );
            memo.all_stored();
            memo.none_stored();
            let again = keys(metadata_objects(&tree, layout, &mut memo, Built::Changed));
            assert_eq!(again.len(), 6, "{again:?} ({layout:?})");
        }
    }
}
