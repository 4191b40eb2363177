//! Placing the arrays of a group on dimensions, once every array of the group is read.
//!
//! Owns how an array's dimension references (NCZarr) or dimension names (pure Zarr's
//! `dimension_names` and `_ARRAY_DIMENSIONS`) become the model's dimensions: found in scope,
//! made where the name says, or anonymous. Where a group's arrays give one name several
//! lengths, the group sees all of them first and gives the name the length of the coordinate
//! array named like it, else the length most of them use (an outer group's dimension of the
//! name winning a tie); the others are placed on anonymous dimensions and keep the name they
//! stored. Knows nothing of how the metadata was fetched.

use super::Reader;
use crate::model::{COMPLEX_DIMENSION, DimId, GroupId, Tree, Var};
use std::collections::HashMap;

/// How an array read from the store names its dimensions, before it is placed on them.
#[derive(Debug)]
pub(super) struct Unplaced {
    pub shape: Vec<u64>,
    /// NCZarr's fully qualified dimension references, one per entry of `shape`.
    pub references: Option<Vec<String>>,
    /// The names the array stores (`dimension_names`, `_ARRAY_DIMENSIONS`), when it stores
    /// one entry per entry of `shape`; `None` entries are anonymous.
    pub names: Option<Vec<Option<String>>>,
}

impl Unplaced {
    /// The stored name of dimension `i`, if any.
    fn name(&self, i: usize) -> Option<&str> {
        self.names.as_ref()?.get(i)?.as_deref()
    }
}

/// What a group's arrays give one dimension name.
#[derive(Debug, Default, Clone, PartialEq)]
pub(super) struct Lengths {
    /// The length of the array named like the dimension.
    coordinate: Option<u64>,
    /// Each length, with how many arrays give it, in the order first given.
    counts: Vec<(u64, usize)>,
}

impl Lengths {
    /// The length the name is given: the coordinate's; else the one most arrays give it,
    /// `outer` (the length of a dimension of that name outside the group) winning a tie, then
    /// the first that is not 0 (an empty array says least about its dimension), then the first.
    fn preferred(&self, outer: Option<u64>) -> Option<u64> {
        if self.coordinate.is_some() {
            return self.coordinate;
        }
        let most = self.counts.iter().map(|(_, n)| *n).max()?;
        let tied = || {
            self.counts
                .iter()
                .filter(|(_, n)| *n == most)
                .map(|(l, _)| *l)
        };
        outer
            .filter(|o| tied().any(|l| l == *o))
            .or_else(|| tied().find(|l| *l != 0))
            .or_else(|| tied().next())
    }
}

/// What the arrays of a group placed by name (in the group's order) give each dimension
/// name; an array counts once for each name and length it gives.
pub(super) fn lengths_given<'u>(
    arrays: impl Iterator<Item = (&'u str, &'u Unplaced)>,
) -> HashMap<String, Lengths> {
    let mut seen: HashMap<String, Lengths> = HashMap::new();
    for (array, unplaced) in arrays {
        if unplaced.references.is_some() {
            continue;
        }
        let mut given: Vec<(&str, u64)> = Vec::new();
        for (i, len) in unplaced.shape.iter().enumerate() {
            let Some(name) = unplaced.name(i) else {
                continue;
            };
            if given.contains(&(name, *len)) {
                continue;
            }
            given.push((name, *len));
            // A name seen before costs no allocation.
            if !seen.contains_key(name) {
                seen.insert(name.to_string(), Lengths::default());
            }
            let Some(lengths) = seen.get_mut(name) else {
                continue;
            };
            if name == array {
                lengths.coordinate.get_or_insert(*len);
            }
            match lengths.counts.iter_mut().find(|(l, _)| l == len) {
                Some((_, n)) => *n += 1,
                None => lengths.counts.push((*len, 1)),
            }
        }
    }
    seen
}

impl Reader<'_> {
    /// Places `var` of group `g` on the dimensions `unplaced` gives it, `given` being what
    /// the group's arrays give each name ([`lengths_given`]).
    pub(super) fn place(
        &mut self,
        g: GroupId,
        var: &mut Var,
        unplaced: &Unplaced,
        given: &HashMap<String, Lengths>,
    ) {
        let dims = match &unplaced.references {
            Some(references) => {
                let dims: Vec<DimId> = references
                    .iter()
                    .zip(&unplaced.shape)
                    .map(|(fqn, len)| match self.find_dim_by_fqn(fqn) {
                        Some(d) => d,
                        None => self.implicit_dim(fqn, *len),
                    })
                    .collect();
                self.keep_clashing_names(var, &dims, unplaced);
                dims
            }
            None => self.pure_dims(g, unplaced, given, var),
        };
        for (d, len) in dims.iter().zip(&unplaced.shape) {
            let dim = &mut self.tree.dims[d.0];
            if dim.unlimited {
                dim.len = dim.len.max(*len);
            } else if dim.len != *len {
                let shape = &unplaced.shape;
                var.unreadable.get_or_insert_with(|| {
                    format!(
                        "shape {shape:?} disagrees with dimension {} of length {}",
                        dim.name, dim.len
                    )
                });
            }
        }
        var.dims = dims;
        self.add_complex_parts(var);
    }

    /// An NCZarr array on an anonymous dimension whose stored name says otherwise (a name it
    /// clashed on when written): the name is kept, to be written again.
    fn keep_clashing_names(&self, var: &mut Var, dims: &[DimId], unplaced: &Unplaced) {
        for (i, d) in dims.iter().enumerate() {
            let dim = self.tree.dim(*d);
            let Some(name) = unplaced.name(i) else {
                continue;
            };
            if dim.name == super::super::anonymous_dim_name(dim.len) && name != dim.name {
                record_clash(var, dims.len(), i, name);
            }
        }
    }

    /// A complex variable's last dimension: its two parts, the root group's
    /// [`COMPLEX_DIMENSION`].
    fn add_complex_parts(&mut self, var: &mut Var) {
        if !var.complex {
            return;
        }
        let parts = match self.tree.find_dim_in_scope(Tree::ROOT, COMPLEX_DIMENSION) {
            Some(d) => d,
            None => self.tree.add_dim(Tree::ROOT, COMPLEX_DIMENSION, 2, false),
        };
        if self.tree.dim(parts).len != 2 {
            var.unreadable
                .get_or_insert_with(|| format!("dimension {COMPLEX_DIMENSION} is not of length 2"));
        }
        var.dims.push(parts);
        var.chunks.push(2);
    }

    /// A dimension reference naming no declared dimension: create it where the name says.
    fn implicit_dim(&mut self, fqn: &str, len: u64) -> DimId {
        let mut parts: Vec<&str> = fqn.split('/').filter(|s| !s.is_empty()).collect();
        let name = parts.pop().unwrap_or("_Anonymous_Dim").to_string();
        let mut g = Tree::ROOT;
        for p in parts {
            g = self.tree.child_named(g, p).unwrap_or(g);
        }
        match self
            .tree
            .group(g)
            .dims
            .iter()
            .copied()
            .find(|d| self.tree.dim(*d).name == name)
        {
            Some(d) => d,
            None => self.tree.add_dim(g, &name, len, false),
        }
    }

    /// Whether an array may use dimension `d` for an extent of `len`: its length, or any
    /// extent of an unlimited dimension in an NCZarr dataset (where unlimited dimensions are
    /// netCDF's, each array as long as it was written).
    fn fits(&self, d: DimId, len: u64) -> bool {
        let dim = self.tree.dim(d);
        dim.len == len || (dim.unlimited && self.nczarr)
    }

    /// Pure Zarr: the dimensions of an array of group `g`. A name is the group's dimension of
    /// the length the group's arrays give it ([`Lengths::preferred`]): the one in scope when
    /// it is the group's own or of that length, else one made in `g`. An array of another
    /// length, and an array naming no dimension, is on an anonymous dimension: netCDF cannot
    /// give one group two dimensions of one name. Which array gets which dimension does not
    /// depend on the order the arrays are placed in.
    fn pure_dims(
        &mut self,
        g: GroupId,
        unplaced: &Unplaced,
        given: &HashMap<String, Lengths>,
        var: &mut Var,
    ) -> Vec<DimId> {
        let rank = unplaced.shape.len();
        let mut dims = Vec::with_capacity(rank);
        for (i, len) in unplaced.shape.iter().enumerate() {
            let Some(name) = unplaced.name(i) else {
                dims.push(self.anonymous(*len));
                continue;
            };
            let in_scope = self.tree.find_dim_in_scope(g, name);
            let outer = in_scope
                .filter(|d| self.tree.dim(*d).group != g)
                .map(|d| self.tree.dim(d).len);
            let length = given
                .get(name)
                .and_then(|l| l.preferred(outer))
                .unwrap_or(*len);
            let dim = match in_scope {
                Some(d) if self.tree.dim(d).group == g || self.fits(d, length) => d,
                // netCDF has no fixed dimension of length 0: such a dimension can only have
                // been unlimited.
                _ => self.tree.add_dim(g, name, length, length == 0),
            };
            dims.push(if self.fits(dim, *len) {
                dim
            } else {
                record_clash(var, rank, i, name);
                self.anonymous(*len)
            });
        }
        dims
    }

    /// The root's dimension without a name of length `len`; of length 0, unlimited (netCDF has
    /// no fixed dimension of that length), as netcdf-c reads it.
    fn anonymous(&mut self, len: u64) -> DimId {
        let name = super::super::anonymous_dim_name(len);
        match self.tree.find_dim_in_scope(Tree::ROOT, &name) {
            Some(d) => d,
            None => self.tree.add_dim(Tree::ROOT, &name, len, len == 0),
        }
    }
}

/// Records that dimension `i` of `var` (of `rank` dimensions) is anonymous where the array
/// named it `name`.
fn record_clash(var: &mut Var, rank: usize, i: usize, name: &str) {
    var.clashing_dim_names.resize(rank, None);
    var.clashing_dim_names[i] = Some(name.to_string());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(shape: &[u64], names: &[&str]) -> Unplaced {
        Unplaced {
            shape: shape.to_vec(),
            references: None,
            names: Some(names.iter().map(|n| Some(n.to_string())).collect()),
        }
    }

    fn lengths(arrays: &[(&str, Unplaced)]) -> HashMap<String, Lengths> {
        lengths_given(arrays.iter().map(|(n, u)| (*n, u)))
    }

    #[test]
    fn a_coordinate_gives_its_name_its_length() {
        let arrays = [
            ("a", named(&[5], &["x"])),
            ("b", named(&[5], &["x"])),
            ("x", named(&[10], &["x"])),
        ];
        assert_eq!(lengths(&arrays)["x"].preferred(Some(5)), Some(10));
    }

    #[test]
    fn without_a_coordinate_most_arrays_decide_and_ties_go_outside_then_first() {
        let arrays = [
            ("a", named(&[3, 5], &["t", "x"])),
            ("b", named(&[4, 7], &["t", "x"])),
            ("c", named(&[4, 9], &["t", "x"])),
        ];
        let given = lengths(&arrays);
        assert_eq!(given["t"].preferred(Some(3)), Some(4));
        assert_eq!(given["x"].preferred(None), Some(5));
        assert_eq!(given["x"].preferred(Some(9)), Some(9));
        assert_eq!(given["x"].preferred(Some(8)), Some(5));
    }

    #[test]
    fn an_empty_array_loses_a_tie() {
        let arrays = [("a", named(&[0], &["t"])), ("b", named(&[3], &["t"]))];
        assert_eq!(lengths(&arrays)["t"].preferred(None), Some(3));
        let empty = [("a", named(&[0], &["t"])), ("b", named(&[0], &["t"]))];
        assert_eq!(lengths(&empty)["t"].preferred(None), Some(0));
    }

    #[test]
    fn an_array_counts_once_per_name_and_length() {
        let arrays = [
            ("a", named(&[5], &["x"])),
            ("b", named(&[5], &["x"])),
            ("cov", named(&[10, 10], &["x", "x"])),
        ];
        assert_eq!(lengths(&arrays)["x"].preferred(None), Some(5));
    }

    #[test]
    fn arrays_placed_by_reference_do_not_count() {
        let mut by_reference = named(&[8], &["x"]);
        by_reference.references = Some(vec!["/x".to_string()]);
        let arrays = [("a", by_reference), ("b", named(&[2], &["x"]))];
        assert_eq!(lengths(&arrays)["x"].preferred(None), Some(2));
    }
}
