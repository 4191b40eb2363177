//! Placing the arrays of a group on dimensions, once every array of the group is read.
//!
//! Owns how an array's dimension references (NCZarr) or dimension names (pure Zarr's
//! `dimension_names` and `_ARRAY_DIMENSIONS`) become the model's dimensions: found in scope,
//! made where the name says, or anonymous. Where a group's arrays give one name several
//! lengths, the group sees all of them first and gives the name the length of the coordinate
//! array named like it, else the length most of them use; the others are placed on anonymous
//! dimensions and keep the name they stored. Knows nothing of how the metadata was fetched.

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
#[derive(Default)]
struct Lengths {
    /// The length of the array named like the dimension.
    coordinate: Option<u64>,
    /// Each length, with how many arrays give it, in the order first given.
    counts: Vec<(u64, usize)>,
}

/// The length each dimension name is given in a group, from its arrays placed by name (in
/// the group's order): the length of the array named like the dimension where it uses the
/// name, else the one most arrays give it, else the first.
pub(super) fn preferred_lengths<'u>(
    arrays: impl Iterator<Item = (&'u str, &'u Unplaced)>,
) -> HashMap<String, u64> {
    let mut seen: HashMap<&str, Lengths> = HashMap::new();
    for (array, unplaced) in arrays {
        if unplaced.references.is_some() {
            continue;
        }
        for (i, len) in unplaced.shape.iter().enumerate() {
            let Some(name) = unplaced.name(i) else {
                continue;
            };
            let Lengths { coordinate, counts } = seen.entry(name).or_default();
            if name == array {
                coordinate.get_or_insert(*len);
            }
            match counts.iter_mut().find(|(l, _)| l == len) {
                Some((_, n)) => *n += 1,
                None => counts.push((*len, 1)),
            }
        }
    }
    seen.into_iter()
        .map(|(name, Lengths { coordinate, counts })| {
            let most = counts
                .iter()
                .rev()
                .max_by_key(|(_, n)| *n)
                .map_or(0, |(l, _)| *l);
            (name.to_string(), coordinate.unwrap_or(most))
        })
        .collect()
}

impl Reader<'_> {
    /// Places `var` of group `g` on the dimensions `unplaced` gives it, `preferred` being the
    /// group's [`preferred_lengths`].
    pub(super) fn place(
        &mut self,
        g: GroupId,
        var: &mut Var,
        unplaced: &Unplaced,
        preferred: &HashMap<String, u64>,
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
            None => self.pure_dims(g, unplaced, preferred, var),
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
    /// extent of an unlimited dimension an NCZarr dataset declares.
    fn fits(&self, d: DimId, len: u64) -> bool {
        let dim = self.tree.dim(d);
        dim.len == len || (dim.unlimited && self.nczarr)
    }

    /// Pure Zarr: the dimensions of an array of group `g`, found in scope by name, made in `g`
    /// at the group's preferred length, or anonymous (no name, or a name the group gives
    /// another length: netCDF cannot give one group two dimensions of one name).
    fn pure_dims(
        &mut self,
        g: GroupId,
        unplaced: &Unplaced,
        preferred: &HashMap<String, u64>,
        var: &mut Var,
    ) -> Vec<DimId> {
        let rank = unplaced.shape.len();
        let mut dims = Vec::with_capacity(rank);
        for (i, len) in unplaced.shape.iter().enumerate() {
            let Some(name) = unplaced.name(i) else {
                dims.push(self.anonymous(*len));
                continue;
            };
            let length = preferred.get(name).copied().unwrap_or(*len);
            let named = match self.tree.find_dim_in_scope(g, name) {
                Some(d) if self.fits(d, *len) => Some(d),
                Some(d) if self.tree.dim(d).group == g => None,
                // An outer group's dimension of the length this group prefers: it serves the
                // group's other arrays.
                Some(d) if self.fits(d, length) => None,
                // netCDF has no fixed dimension of length 0: such a dimension can only have
                // been unlimited.
                _ => {
                    let d = self.tree.add_dim(g, name, length, length == 0);
                    self.fits(d, *len).then_some(d)
                }
            };
            dims.push(match named {
                Some(d) => d,
                None => {
                    record_clash(var, rank, i, name);
                    self.anonymous(*len)
                }
            });
        }
        dims
    }

    fn anonymous(&mut self, len: u64) -> DimId {
        let name = super::super::anonymous_dim_name(len);
        match self.tree.find_dim_in_scope(Tree::ROOT, &name) {
            Some(d) => d,
            None => self.tree.add_dim(Tree::ROOT, &name, len, false),
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

    #[test]
    fn a_coordinate_gives_its_name_its_length() {
        let arrays = [
            ("a", named(&[5], &["x"])),
            ("b", named(&[5], &["x"])),
            ("x", named(&[10], &["x"])),
        ];
        let lengths = preferred_lengths(arrays.iter().map(|(n, u)| (*n, u)));
        assert_eq!(lengths["x"], 10);
    }

    #[test]
    fn without_a_coordinate_most_arrays_decide_and_ties_go_to_the_first() {
        let arrays = [
            ("a", named(&[3, 5], &["t", "x"])),
            ("b", named(&[4, 7], &["t", "x"])),
            ("c", named(&[4, 9], &["t", "x"])),
        ];
        let lengths = preferred_lengths(arrays.iter().map(|(n, u)| (*n, u)));
        assert_eq!(lengths["t"], 4);
        assert_eq!(lengths["x"], 5);
    }

    #[test]
    fn arrays_placed_by_reference_do_not_vote() {
        let mut by_reference = named(&[8], &["x"]);
        by_reference.references = Some(vec!["/x".to_string()]);
        let arrays = [("a", by_reference), ("b", named(&[2], &["x"]))];
        let lengths = preferred_lengths(arrays.iter().map(|(n, u)| (*n, u)));
        assert_eq!(lengths["x"], 2);
    }
}
