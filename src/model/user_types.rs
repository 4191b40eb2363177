//! The user-defined types of a dataset as the netCDF API lists them ([`UserType`], ids from
//! `NC_FIRSTUSERTYPEID`): compound types of variables holding records, named after them;
//! compound and enum types a program defines (`nc_def_compound`, `nc_insert_compound`,
//! `nc_def_enum`, `nc_insert_enum`); and those a dataset's metadata declares
//! ([`DeclaredType`]).
//!
//! Owns the rules a definition keeps (fields inside the value and apart from each other,
//! named once, nested no deeper than records are read), the record a defined type's values
//! are stored as, and how a stored record is fitted to the type declared for it. Knows
//! nothing of JSON, stores, names' character rules or C.

use super::enums::Enumeration;
use super::records::{
    FieldKind, MOST_RECORD_BYTES, MemoryLayout, Record, RecordField, count, too_large,
};
use super::tree::{Endian, GroupId};
use super::types::NcType;
use crate::error::{Error, Result};
use std::collections::HashMap;

/// The first id of a user-defined type (`NC_FIRSTUSERTYPEID`).
pub const FIRST_USER_TYPE: i32 = 32;

/// Bytes of one value of a variable-length type in memory (`nc_vlen_t`: a `size_t` count and
/// a pointer).
pub const VLEN_SIZE: usize = 2 * std::mem::size_of::<usize>();

/// The longest netCDF name, in bytes (`NC_MAX_NAME`).
const LONGEST_NAME: usize = 256;

/// Compound types nested deeper than this are refused (as records nested deeper are).
const DEEPEST: usize = 16;

/// Fields one compound type may have (as many as a record read may).
const MOST_FIELDS: usize = 4096;

/// Dimensions one field may have (HDF5's most).
const MOST_FIELD_DIMS: usize = 32;

/// Atomic fields a compound type may hold, nested types' counted once each time they are
/// used (a type nests others by reference, so without a bound a short definition could
/// stand for an enormous record).
const MOST_LEAVES: usize = 1 << 16;

/// Types a dataset's metadata may declare; more are not listed.
const MOST_DECLARED_TYPES: usize = 4096;

/// Fields and enum members the types a dataset's metadata declares may have in all; the
/// types past them are not listed.
const MOST_DECLARED_FIELDS: usize = 1 << 16;

/// A compound or enum type as the netCDF API lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct UserType {
    pub name: String,
    /// The group that defines it.
    pub group: GroupId,
    /// Bytes of one value in memory.
    pub size: usize,
    pub fields: Vec<TypeField>,
    /// Fields may still be inserted: the type was defined by the program and no variable
    /// or other type uses it yet; an enum type's members, until the definitions end.
    pub open: bool,
    /// How deep compound types nest in it (1: its fields are atomic).
    pub depth: usize,
    /// Its atomic fields, nested types' counted each time they are used.
    pub leaves: usize,
    /// A type no definition gives: the one of a variable holding records, named after it.
    pub implicit: bool,
    pub class: TypeClass,
}

/// The kind of a user-defined type, with what only that kind has.
#[derive(Debug, Clone, PartialEq)]
pub enum TypeClass {
    /// A compound type, of its `fields`.
    Compound,
    /// An enum type: its base and members (it has no fields).
    Enum(Enumeration),
    /// An opaque type: values of its size in bytes that nothing interprets (no fields).
    Opaque,
    /// A variable-length type: each value a sequence of any length of its base type's values
    /// (in memory an `nc_vlen_t`, a count and a pointer).
    Vlen(NcType),
}

impl UserType {
    /// An enum type's base and members; `None` for a type of another class.
    pub fn enumeration(&self) -> Option<&Enumeration> {
        match &self.class {
            TypeClass::Enum(e) => Some(e),
            _ => None,
        }
    }

    pub fn is_compound(&self) -> bool {
        self.class == TypeClass::Compound
    }

    pub fn is_opaque(&self) -> bool {
        self.class == TypeClass::Opaque
    }

    /// A variable-length type's base; `None` for a type of another class.
    pub fn vlen_base(&self) -> Option<NcType> {
        match self.class {
            TypeClass::Vlen(base) => Some(base),
            _ => None,
        }
    }
}

/// One field of a compound type.
#[derive(Debug, Clone, PartialEq)]
pub struct TypeField {
    pub name: String,
    pub offset: usize,
    /// An atomic type's id, a compound type's or an enum type's.
    pub type_id: i32,
    pub dims: Vec<usize>,
}

/// A type as a dataset's metadata declares it: a compound type, its fields' types by name
/// (an atomic type's CDL name, or the full name of a compound, enum or opaque type declared
/// anywhere), an enum type or an opaque type.
#[derive(Debug, Clone, PartialEq)]
pub struct DeclaredType {
    pub group: GroupId,
    pub name: String,
    pub size: usize,
    /// A compound type's fields (empty for other classes).
    pub fields: Vec<DeclaredField>,
    pub class: TypeClass,
}

/// One field of a [`DeclaredType`].
#[derive(Debug, Clone, PartialEq)]
pub struct DeclaredField {
    pub name: String,
    pub offset: usize,
    pub type_name: String,
    pub dims: Vec<usize>,
}

/// The user-defined type of values stored as an atomic type (an enum type's, stored as its
/// base; an opaque type's, stored as bytes): listed types by id; a type a dataset's metadata
/// names, by its full name until the dataset's types are listed.
#[derive(Debug, Clone, PartialEq)]
pub enum TypeRef {
    Listed(i32),
    Named(String),
}

impl TypeRef {
    /// The id of the type, once listed.
    pub fn id(&self) -> Option<i32> {
        match self {
            TypeRef::Listed(id) => Some(*id),
            TypeRef::Named(_) => None,
        }
    }
}

/// The most user-defined types a dataset may have (whose records need more are not served).
const MOST_TYPES: usize = 1 << 16;

/// The user-defined types of a dataset, in id order: a compound type's nested types before
/// it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UserTypes {
    pub types: Vec<UserType>,
    /// Each type's id by group and name.
    index: HashMap<(GroupId, String), i32>,
    /// The next suffix to try for a type named after a variable, by group and base name
    /// (so naming many alike takes no search).
    suffixes: HashMap<(GroupId, String), usize>,
}

/// Refuses a name netCDF cannot give a type or a field: empty, longer than `NC_MAX_NAME`, or
/// holding a `/`.
fn plain_name(name: &str) -> Result<()> {
    if name.is_empty() || name.contains('/') {
        return Err(Error::BadName(name.to_string()));
    }
    if name.len() > LONGEST_NAME {
        return Err(Error::MaxName(name.to_string()));
    }
    Ok(())
}

impl UserTypes {
    /// The type with this id.
    pub fn get(&self, id: i32) -> Option<&UserType> {
        let index = usize::try_from(id.checked_sub(FIRST_USER_TYPE)?).ok()?;
        self.types.get(index)
    }

    fn get_mut(&mut self, id: i32) -> Option<&mut UserType> {
        let index = usize::try_from(id.checked_sub(FIRST_USER_TYPE)?).ok()?;
        self.types.get_mut(index)
    }

    fn push(&mut self, t: UserType) -> Result<i32> {
        let id = i32::try_from(self.types.len())
            .ok()
            .filter(|_| self.types.len() < MOST_TYPES)
            .and_then(|i| i.checked_add(FIRST_USER_TYPE))
            .ok_or_else(|| too_large("a dataset of so many types"))?;
        self.index.entry((t.group, t.name.clone())).or_insert(id);
        self.types.push(t);
        Ok(id)
    }

    /// Takes back the type listed last.
    fn pop(&mut self) {
        if let Some(t) = self.types.pop() {
            self.index.remove(&(t.group, t.name));
        }
    }

    /// Lists the compound type of `record` (and first those of its nested records) in group
    /// `g`, named `name` unless `taken` says a name is in use there; returns its id.
    pub fn add(
        &mut self,
        record: &Record,
        g: GroupId,
        name: &str,
        taken: &dyn Fn(&str) -> bool,
    ) -> Result<i32> {
        if record.is_raw() {
            let type_name = self.name_after(g, name, taken);
            return self.push(UserType {
                name: type_name,
                group: g,
                size: record.stored_size,
                fields: Vec::new(),
                open: false,
                depth: 0,
                leaves: 1,
                implicit: true,
                class: TypeClass::Opaque,
            });
        }
        let offsets = record.memory_offsets()?;
        let mut fields = Vec::with_capacity(record.fields.len());
        let mut depth = 1;
        let mut leaves = 0usize;
        for (f, offset) in record.fields.iter().zip(offsets) {
            let type_id = match &f.kind {
                FieldKind::Nested(inner) => {
                    let id = self.add(inner, g, &format!("{name}_{}", f.name), taken)?;
                    let t = self.get(id);
                    depth = depth.max(t.map_or(0, |t| t.depth) + 1);
                    leaves = leaves.saturating_add(t.map_or(0, |t| t.leaves));
                    id
                }
                kind => {
                    leaves = leaves.saturating_add(1);
                    kind.atomic().map_or(0, NcType::id)
                }
            };
            fields.push(TypeField {
                name: f.name.clone(),
                offset,
                type_id,
                dims: f.memory_dims(),
            });
        }
        let type_name = self.name_after(g, name, taken);
        self.push(UserType {
            name: type_name,
            group: g,
            size: record.memory_size()?,
            fields,
            open: false,
            depth,
            leaves,
            implicit: true,
            class: TypeClass::Compound,
        })
    }

    /// A name for the type of the records of variable `name` of group `g`: `<name>_t`, with a
    /// number after it when `taken` says the name is in use there or a type has it.
    fn name_after(&mut self, g: GroupId, name: &str, taken: &dyn Fn(&str) -> bool) -> String {
        // Short enough for netCDF with any suffix.
        let mut cut = name.len().min(LONGEST_NAME - 16);
        while !name.is_char_boundary(cut) {
            cut -= 1;
        }
        let base = &name[..cut];
        let key = (g, base.to_string());
        let mut n = self.suffixes.get(&key).copied().unwrap_or(0);
        let named = |n: usize| match n {
            0 => format!("{base}_t"),
            n => format!("{base}_t{n}"),
        };
        let mut type_name = named(n);
        while taken(&type_name) || self.named(g, &type_name).is_some() {
            n += 1;
            type_name = named(n);
        }
        self.suffixes.insert(key, n + 1);
        type_name
    }

    /// The id of the type group `g` defines under `name`.
    pub fn named(&self, g: GroupId, name: &str) -> Option<i32> {
        self.index.get(&(g, name.to_string())).copied()
    }

    /// `nc_def_compound`: a compound type of `size` bytes and no fields yet, in group `g`.
    pub fn define(&mut self, g: GroupId, name: &str, size: usize) -> Result<i32> {
        self.define_sized(g, name, size, TypeClass::Compound)
    }

    /// A type of `size` bytes of a class whose values have that size (compound, opaque),
    /// defined in group `g`: the rules its name and size keep.
    fn define_sized(
        &mut self,
        g: GroupId,
        name: &str,
        size: usize,
        class: TypeClass,
    ) -> Result<i32> {
        plain_name(name)?;
        let compound = class == TypeClass::Compound;
        if size == 0 || size > MOST_RECORD_BYTES {
            let what = if compound { "compound" } else { "opaque" };
            return Err(Error::Invalid(format!(
                "{what} type of {size} bytes (at most {MOST_RECORD_BYTES} are stored)"
            )));
        }
        if self.named(g, name).is_some() {
            return Err(Error::NameInUse(name.to_string()));
        }
        self.push(UserType {
            name: name.to_string(),
            group: g,
            size,
            fields: Vec::new(),
            // A compound type takes fields next; an opaque type has none.
            open: compound,
            depth: usize::from(compound),
            leaves: usize::from(!compound),
            implicit: false,
            class,
        })
    }

    /// `nc_def_enum`: an enum type of integer type `base` and no members yet, in group `g`.
    pub fn define_enum(&mut self, g: GroupId, name: &str, base: NcType) -> Result<i32> {
        plain_name(name)?;
        let enumeration = Enumeration::new(base)?;
        if self.named(g, name).is_some() {
            return Err(Error::NameInUse(name.to_string()));
        }
        self.push(UserType {
            name: name.to_string(),
            group: g,
            size: base.size(),
            fields: Vec::new(),
            open: true,
            depth: 0,
            leaves: 1,
            implicit: false,
            class: TypeClass::Enum(enumeration),
        })
    }

    /// `nc_def_opaque`: an opaque type of values of `size` bytes, in group `g`.
    pub fn define_opaque(&mut self, g: GroupId, name: &str, size: usize) -> Result<i32> {
        self.define_sized(g, name, size, TypeClass::Opaque)
    }

    /// `nc_def_vlen`: a variable-length type of values of numeric type `base` (not `char` or
    /// `string`: sequences of text, of strings, or of user-defined types, are not served), in
    /// group `g`.
    pub fn define_vlen(&mut self, g: GroupId, name: &str, base: NcType) -> Result<i32> {
        plain_name(name)?;
        if !base.is_numeric() {
            return Err(Error::BadType(base.id()));
        }
        if self.named(g, name).is_some() {
            return Err(Error::NameInUse(name.to_string()));
        }
        self.push(UserType {
            name: name.to_string(),
            group: g,
            size: VLEN_SIZE,
            fields: Vec::new(),
            open: false,
            depth: 0,
            leaves: 1,
            implicit: false,
            class: TypeClass::Vlen(base),
        })
    }

    /// Lists the variable-length type of base `base` of a variable `name` of group `g` whose
    /// metadata declares none, named after it (`<name>_t`) unless `taken` says a name is in
    /// use there; returns its id.
    pub fn add_vlen(
        &mut self,
        base: NcType,
        g: GroupId,
        name: &str,
        taken: &dyn Fn(&str) -> bool,
    ) -> Result<i32> {
        let type_name = self.name_after(g, name, taken);
        let id = self.define_vlen(g, &type_name, base)?;
        if let Some(t) = self.get_mut(id) {
            t.implicit = true;
        }
        Ok(id)
    }

    /// `nc_insert_enum`: member `name` of `value` in enum type `id`, which must still take
    /// members (until the definitions end).
    pub fn insert_enum(&mut self, id: i32, name: &str, value: i128) -> Result<()> {
        let t = match id {
            ..0 => return Err(Error::Invalid(format!("type id {id}"))),
            0..FIRST_USER_TYPE => return Err(Error::BadType(id)),
            _ => self.get_mut(id).ok_or(Error::BadTypeId(id))?,
        };
        if !matches!(t.class, TypeClass::Enum(_)) {
            return Err(Error::BadType(id));
        }
        if !t.open {
            return Err(Error::TypeDefined(t.name.clone()));
        }
        match &mut t.class {
            TypeClass::Enum(e) => e.insert(name, value),
            _ => Err(Error::BadType(id)),
        }
    }

    /// The enum type with this id (a compound type's id is `NC_EBADTYPE`).
    pub fn enumeration(&self, id: i32) -> Result<&Enumeration> {
        self.get(id)
            .ok_or(Error::BadType(id))?
            .enumeration()
            .ok_or(Error::BadType(id))
    }

    /// The atomic type one value of type `id` is held in as a field of a stored record, and
    /// how many of them: an atomic type's own, an enum type's base, an opaque type's bytes
    /// (`ubyte`, as many as its size); `None` for a compound type.
    fn stored_as(&self, id: i32) -> Option<(NcType, usize)> {
        match self.get(id).map(|t| &t.class) {
            Some(TypeClass::Enum(e)) => Some((e.base, 1)),
            Some(TypeClass::Opaque) => self.get(id).map(|t| (NcType::UByte, t.size)),
            Some(TypeClass::Compound | TypeClass::Vlen(_)) => None,
            None => NcType::from_id(id).ok().map(|ty| (ty, 1)),
        }
    }

    /// An enum type without members, which no definitions may end with (`NC_EINVAL`, as
    /// netCDF-4 answers when its definitions end).
    pub fn check_enums_have_members(&self) -> Result<()> {
        match self
            .types
            .iter()
            .find(|t| t.enumeration().is_some_and(|e| e.members().is_empty()))
        {
            Some(t) => Err(Error::Invalid(format!(
                "enum type {} has no members",
                t.name
            ))),
            None => Ok(()),
        }
    }

    /// Bytes of one value of type `id`, how deep compound types nest in it (0 for an atomic,
    /// enum or opaque type) and its atomic fields. Variable-length strings have no place in a
    /// stored record.
    fn field_type(&self, id: i32) -> Result<(usize, usize, usize)> {
        if id >= FIRST_USER_TYPE {
            let t = self.get(id).ok_or(Error::BadType(id))?;
            match &t.class {
                // Stored as its base.
                TypeClass::Enum(e) => return Ok((e.base.size(), 0, 1)),
                // Stored as its bytes.
                TypeClass::Opaque => return Ok((t.size, 0, 1)),
                // Fields of variable-length types are not served.
                TypeClass::Vlen(_) => return Err(Error::BadType(id)),
                TypeClass::Compound => {}
            }
            if t.fields.is_empty() {
                return Err(Error::Invalid(format!(
                    "compound type {} has no fields yet",
                    t.name
                )));
            }
            return Ok((t.size, t.depth, t.leaves));
        }
        match NcType::from_id(id)? {
            NcType::String => Err(Error::BadType(id)),
            ty => Ok((ty.size(), 0, 1)),
        }
    }

    /// `nc_insert_compound`, `nc_insert_array_compound`: a field of type `id`, which must be
    /// open; the field's own compound type, if any, can take no more fields after it.
    pub fn insert(&mut self, id: i32, field: TypeField) -> Result<()> {
        plain_name(&field.name)?;
        let t = match id {
            ..0 => return Err(Error::Invalid(format!("type id {id}"))),
            0..FIRST_USER_TYPE => return Err(Error::BadType(id)),
            _ => self.get(id).ok_or(Error::BadTypeId(id))?,
        };
        if !t.is_compound() {
            return Err(Error::BadType(id));
        }
        if !t.open {
            return Err(Error::TypeDefined(t.name.clone()));
        }
        if field.type_id == id {
            return Err(Error::BadType(id));
        }
        if t.fields.iter().any(|f| f.name == field.name) {
            return Err(Error::NameInUse(field.name));
        }
        if t.fields.len() >= MOST_FIELDS {
            return Err(Error::Invalid(format!(
                "compound type {} would have more than {MOST_FIELDS} fields",
                t.name
            )));
        }
        if field.dims.len() > MOST_FIELD_DIMS || field.dims.contains(&0) {
            return Err(Error::Invalid(format!(
                "field {:?} of dimensions {:?}",
                field.name, field.dims
            )));
        }
        let (value_size, depth, leaves) = self.field_type(field.type_id)?;
        if depth >= DEEPEST {
            return Err(Error::Invalid(format!(
                "compound types nested more than {DEEPEST} deep"
            )));
        }
        let leaves = t.leaves.saturating_add(leaves);
        if leaves > MOST_LEAVES {
            return Err(Error::Invalid(format!(
                "compound type {} would hold more than {MOST_LEAVES} fields, nested ones counted",
                t.name
            )));
        }
        let extent = |offset: usize, value_size: usize, dims: &[usize]| {
            count(dims)
                .ok()
                .and_then(|n| n.checked_mul(value_size))
                .and_then(|bytes| offset.checked_add(bytes))
        };
        let end = extent(field.offset, value_size, &field.dims)
            .filter(|&end| end <= t.size)
            .ok_or_else(|| {
                Error::Invalid(format!(
                    "field {:?} at offset {} does not fit compound type {} of {} bytes",
                    field.name, field.offset, t.name, t.size
                ))
            })?;
        for f in &t.fields {
            let (size, _, _) = self.field_type(f.type_id)?;
            let other_end = extent(f.offset, size, &f.dims).unwrap_or(usize::MAX);
            if field.offset < other_end && f.offset < end {
                return Err(Error::Invalid(format!(
                    "field {:?} overlaps field {:?} of compound type {}",
                    field.name, f.name, t.name
                )));
            }
        }
        if self
            .get(field.type_id)
            .is_some_and(|t| t.enumeration().is_none())
        {
            // An enum type takes members until the definitions end: its values are stored
            // as its base whatever they are.
            self.close(field.type_id);
        }
        if let Some(t) = self.get_mut(id) {
            t.depth = t.depth.max(depth + 1);
            t.leaves = leaves;
            t.fields.push(field);
        }
        Ok(())
    }

    /// Takes no more fields into type `id`: a variable or another type now uses it, which
    /// a definition gave, so it and the types it holds are kept as defined types.
    pub fn close(&mut self, id: i32) {
        let nested: Vec<i32> = match self.get_mut(id) {
            Some(t) => {
                t.open = false;
                let was_implicit = std::mem::replace(&mut t.implicit, false);
                if !was_implicit {
                    return;
                }
                t.fields.iter().map(|f| f.type_id).collect()
            }
            None => return,
        };
        for f in nested {
            if f >= FIRST_USER_TYPE {
                self.close(f);
            }
        }
    }

    /// Takes no more fields into any type (the definitions end).
    pub fn close_all(&mut self) {
        for t in &mut self.types {
            t.open = false;
        }
    }

    /// The record the values of defined type `id` are stored as: its fields packed in the
    /// order they were defined (as numpy packs a dtype, no padding for other readers to
    /// see), numbers in this machine's byte order, text as bytes; in memory, each field where
    /// the definition places it.
    pub fn record_of(&self, id: i32) -> Result<Record> {
        let t = self.get(id).ok_or(Error::BadType(id))?;
        match &t.class {
            TypeClass::Opaque => return Ok(Record::raw(t.size)),
            TypeClass::Enum(_) | TypeClass::Vlen(_) => return Err(Error::BadType(id)),
            TypeClass::Compound => {}
        }
        if t.fields.is_empty() {
            return Err(Error::Invalid(format!(
                "compound type {} has no fields",
                t.name
            )));
        }
        let mut fields = Vec::with_capacity(t.fields.len());
        let mut at = 0usize;
        for f in &t.fields {
            let number = |ty: NcType| FieldKind::Number {
                ty,
                endian: Endian::native(),
            };
            let mut dims = f.dims.clone();
            let (kind, size) = match self.get(f.type_id) {
                Some(ft) => match &ft.class {
                    TypeClass::Enum(e) => (number(e.base), e.base.size()),
                    // Its bytes, as numpy stores a void field's.
                    TypeClass::Opaque => {
                        dims.push(ft.size);
                        (number(NcType::UByte), 1)
                    }
                    TypeClass::Vlen(_) => return Err(Error::BadType(f.type_id)),
                    TypeClass::Compound => {
                        let inner = self.record_of(f.type_id)?;
                        let size = inner.stored_size;
                        (FieldKind::Nested(inner), size)
                    }
                },
                None => match NcType::from_id(f.type_id)? {
                    NcType::Char => (FieldKind::Char, 1),
                    NcType::String => return Err(Error::BadType(f.type_id)),
                    ty => (number(ty), ty.size()),
                },
            };
            let values = count(&dims)?;
            fields.push(RecordField {
                name: f.name.clone(),
                stored_offset: at,
                dims,
                kind,
            });
            at = values
                .checked_mul(size)
                .and_then(|bytes| at.checked_add(bytes))
                .ok_or_else(|| too_large("a record"))?;
        }
        Ok(Record {
            fields,
            stored_size: at,
            memory: Some(MemoryLayout {
                offsets: t.fields.iter().map(|f| f.offset).collect(),
                size: t.size,
            }),
        })
    }

    /// `record` laid out as type `id` lays out its values, or `None` when they do not match:
    /// the same field names, each of the same type (nested types matched in turn) and
    /// number of values.
    pub fn fit(&self, id: i32, record: &Record) -> Option<Record> {
        let t = self.get(id)?;
        match &t.class {
            TypeClass::Opaque if record.is_raw() && record.stored_size == t.size => {
                return Some(record.clone());
            }
            TypeClass::Compound if !record.is_raw() => {}
            _ => return None,
        }
        if t.fields.len() != record.fields.len() {
            return None;
        }
        let mut fields = Vec::with_capacity(t.fields.len());
        for tf in &t.fields {
            let rf = record.fields.iter().find(|f| f.name == tf.name)?;
            let values = count(&tf.dims).ok()?;
            let kind = match &rf.kind {
                FieldKind::Nested(inner) if tf.type_id >= FIRST_USER_TYPE => {
                    if count(&rf.dims).ok()? != values {
                        return None;
                    }
                    FieldKind::Nested(self.fit(tf.type_id, inner)?)
                }
                kind if self.stored_as(tf.type_id).is_some_and(|(ty, per_value)| {
                    kind.atomic() == Some(ty)
                        && values.checked_mul(per_value) == count(&rf.memory_dims()).ok()
                }) =>
                {
                    kind.clone()
                }
                _ => return None,
            };
            fields.push(RecordField {
                name: rf.name.clone(),
                stored_offset: rf.stored_offset,
                dims: rf.dims.clone(),
                kind,
            });
        }
        Some(Record {
            fields,
            stored_size: record.stored_size,
            memory: Some(MemoryLayout {
                offsets: t.fields.iter().map(|f| f.offset).collect(),
                size: t.size,
            }),
        })
    }

    /// Lists the types a dataset's metadata declares (`full_names[i]` is `declared[i]`'s full
    /// name), each after the types its fields name, which may be declared later or in a group
    /// below (as a program may define them), else in the order given; returns the id of each
    /// full name listed. A type that breaks a rule of [`UserTypes::insert`], names a type
    /// that is not listed or holds itself is not listed, nor are types past
    /// [`MOST_DECLARED_TYPES`] or [`MOST_DECLARED_FIELDS`].
    pub fn declare_all(
        &mut self,
        declared: &[DeclaredType],
        full_names: &[String],
    ) -> HashMap<String, i32> {
        let mut fields = 0usize;
        let n = declared
            .iter()
            .take(MOST_DECLARED_TYPES)
            .take_while(|d| {
                let members = match &d.class {
                    TypeClass::Enum(e) => e.members().len(),
                    _ => 0,
                };
                fields = fields.saturating_add(d.fields.len() + members);
                fields <= MOST_DECLARED_FIELDS
            })
            .count();
        let mut index: HashMap<&str, usize> = HashMap::new();
        for (i, name) in full_names.iter().enumerate().take(n) {
            index.entry(name.as_str()).or_insert(i);
        }
        // Kahn's order: a type once every type it names is listed; the first such in the
        // order given first.
        let mut waiting_for = vec![0usize; n];
        let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (i, decl) in declared.iter().enumerate().take(n) {
            let mut named: Vec<usize> = decl
                .fields
                .iter()
                .filter_map(|f| index.get(f.type_name.as_str()).copied())
                .collect();
            named.sort_unstable();
            named.dedup();
            waiting_for[i] = named.len();
            for j in named {
                dependents[j].push(i);
            }
        }
        let mut ready: std::collections::BinaryHeap<std::cmp::Reverse<usize>> = (0..n)
            .filter(|&i| waiting_for[i] == 0)
            .map(std::cmp::Reverse)
            .collect();
        let mut listed = HashMap::new();
        while let Some(std::cmp::Reverse(i)) = ready.pop() {
            if let Ok(id) = self.declare(&declared[i], &listed) {
                listed.insert(full_names[i].clone(), id);
            }
            for &d in &dependents[i] {
                waiting_for[d] -= 1;
                if waiting_for[d] == 0 {
                    ready.push(std::cmp::Reverse(d));
                }
            }
        }
        listed
    }

    /// Lists one declared type, its fields' compound types found in `listed` (full name ->
    /// id); a declaration that breaks a rule of [`UserTypes::insert`] lists nothing.
    fn declare(&mut self, decl: &DeclaredType, listed: &HashMap<String, i32>) -> Result<i32> {
        match &decl.class {
            TypeClass::Enum(e) => return self.declare_enum(decl, e),
            TypeClass::Opaque => return self.define_opaque(decl.group, &decl.name, decl.size),
            TypeClass::Vlen(base) => return self.define_vlen(decl.group, &decl.name, *base),
            TypeClass::Compound => {}
        }
        let id = self.define(decl.group, &decl.name, decl.size)?;
        let filled = decl.fields.iter().try_for_each(|f| {
            let type_id = match NcType::from_name(&f.type_name) {
                Some(t) => t.id(),
                None => *listed.get(&f.type_name).ok_or(Error::BadType(0))?,
            };
            self.insert(
                id,
                TypeField {
                    name: f.name.clone(),
                    offset: f.offset,
                    type_id,
                    dims: f.dims.clone(),
                },
            )
        });
        let filled = filled.and_then(|()| match self.get(id) {
            Some(t) if t.fields.is_empty() => Err(Error::Invalid(format!(
                "compound type {} has no fields",
                t.name
            ))),
            _ => Ok(()),
        });
        if let Err(e) = filled {
            self.pop();
            return Err(e);
        }
        self.close(id);
        Ok(id)
    }

    /// Lists one declared enum type (its members kept their rules as they were read); one
    /// without members lists nothing.
    fn declare_enum(&mut self, decl: &DeclaredType, e: &Enumeration) -> Result<i32> {
        if e.members().is_empty() {
            return Err(Error::Invalid(format!(
                "enum type {} has no members",
                decl.name
            )));
        }
        let id = self.define_enum(decl.group, &decl.name, e.base)?;
        if let Some(t) = self.get_mut(id) {
            t.class = TypeClass::Enum(e.clone());
            t.open = false;
        }
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::super::records::fixtures::{placed, record};
    use super::*;

    /// Type `name` of `size` bytes with these fields (name, offset, type, dimensions).
    fn defined(
        types: &mut UserTypes,
        name: &str,
        size: usize,
        fields: &[(&str, usize, i32, &[usize])],
    ) -> i32 {
        let id = types.define(GroupId(0), name, size).unwrap();
        for (name, offset, type_id, dims) in fields {
            types
                .insert(id, field(name, *offset, *type_id, dims))
                .unwrap();
        }
        id
    }

    #[test]
    fn nested_types_are_listed_first_and_names_in_use_are_avoided() {
        let mut types = UserTypes::default();
        let taken = |n: &str| n == "rec_t";
        let id = types.add(&record(), GroupId(0), "rec", &taken).unwrap();
        assert_eq!(id, FIRST_USER_TYPE + 1);
        let inner = types.get(FIRST_USER_TYPE).unwrap();
        assert_eq!(inner.name, "rec_d_t");
        assert_eq!(inner.size, 8);
        let outer = types.get(id).unwrap();
        assert_eq!(outer.name, "rec_t1");
        assert_eq!(outer.fields[3].type_id, FIRST_USER_TYPE);
        assert_eq!(outer.fields[2].dims, vec![3]);
        assert!(types.get(FIRST_USER_TYPE + 2).is_none());
        assert!(types.get(1).is_none());
    }

    #[test]
    fn many_records_of_alike_names_are_named_without_search() {
        // 20000 nested records whose names agree in the first 240 bytes.
        let long = "n".repeat(250);
        let inner = record();
        let mut outer = inner.clone();
        outer.fields = (0..20_000)
            .map(|i| RecordField {
                name: format!("{long}{i}"),
                stored_offset: 0,
                dims: Vec::new(),
                kind: FieldKind::Nested(inner.clone()),
            })
            .collect();
        let mut types = UserTypes::default();
        let asked = std::cell::Cell::new(0usize);
        let taken = |_: &str| {
            asked.set(asked.get() + 1);
            false
        };
        for f in &outer.fields {
            let FieldKind::Nested(r) = &f.kind else {
                unreachable!()
            };
            types.add(r, GroupId(0), &f.name, &taken).unwrap();
        }
        // One name tried per type (each record and its nested one), not one per type before.
        assert_eq!(asked.get(), types.types.len());
        let names: std::collections::HashSet<_> = types.types.iter().map(|t| &t.name).collect();
        assert_eq!(names.len(), types.types.len(), "every name once");
    }

    #[test]
    fn type_names_stay_within_netcdf_names() {
        let mut types = UserTypes::default();
        let long = "\u{e9}".repeat(200);
        let id = types.add(&record(), GroupId(0), &long, &|_| false).unwrap();
        let outer = &types.get(id).unwrap().name;
        let inner = &types.get(FIRST_USER_TYPE).unwrap().name;
        assert!(outer.len() <= LONGEST_NAME && inner.len() <= LONGEST_NAME);
        assert_ne!(outer, inner);
    }

    fn field(name: &str, offset: usize, type_id: i32, dims: &[usize]) -> TypeField {
        TypeField {
            name: name.into(),
            offset,
            type_id,
            dims: dims.to_vec(),
        }
    }

    #[test]
    fn a_definition_keeps_its_fields_inside_the_value_and_apart() {
        let mut types = UserTypes::default();
        let id = types.define(GroupId(0), "obs_t", 16).unwrap();
        let int = NcType::Int.id();
        types.insert(id, field("a", 0, int, &[])).unwrap();
        types
            .insert(id, field("b", 4, NcType::Char.id(), &[3]))
            .unwrap();
        let refused = [
            field("a", 8, int, &[]),
            field("c", 6, int, &[]),
            field("c", 12, int, &[2]),
            field("c", usize::MAX, int, &[]),
            field("c", 8, int, &[usize::MAX, 2]),
            field("c", 8, NcType::String.id(), &[]),
            field("c", 8, id, &[]),
            field("c", 8, 99, &[]),
            field("", 8, int, &[]),
            field("c/d", 8, int, &[]),
        ];
        for f in refused {
            assert!(types.insert(id, f.clone()).is_err(), "{f:?}");
        }
        types
            .insert(id, field("c", 8, NcType::Double.id(), &[]))
            .unwrap();
        assert!(types.define(GroupId(0), "obs_t", 4).is_err());
        assert!(
            types
                .define(GroupId(0), "big", MOST_RECORD_BYTES + 1)
                .is_err()
        );
        assert!(types.define(GroupId(0), "none", 0).is_err());

        let outer = types.define(GroupId(0), "pair_t", 40).unwrap();
        assert!(types.get(id).unwrap().open);
        types.insert(outer, field("o", 8, id, &[2])).unwrap();
        assert!(
            !types.get(id).unwrap().open,
            "a nested type takes no more fields"
        );
        assert!(matches!(
            types.insert(id, field("d", 12, int, &[])),
            Err(Error::TypeDefined(_))
        ));
        let r = types.record_of(outer).unwrap();
        // Stored packed: obs_t in 4 + 3 + 8 bytes, twice.
        assert_eq!(r.stored_size, 30);
        assert_eq!(r.memory_size().unwrap(), 40);
        assert_eq!(
            placed(&r.plan().unwrap()),
            vec![
                (0, 8, 1),
                (4, 12, 3),
                (7, 16, 1),
                (15, 24, 1),
                (19, 28, 3),
                (22, 32, 1)
            ]
        );
    }

    #[test]
    fn nesting_is_bounded() {
        let mut types = UserTypes::default();
        let mut inner = types.define(GroupId(0), "t0", 1).unwrap();
        types
            .insert(inner, field("x", 0, NcType::UByte.id(), &[]))
            .unwrap();
        let mut refused = false;
        for depth in 1..40 {
            let t = types.define(GroupId(0), &format!("t{depth}"), 1).unwrap();
            if types.insert(t, field("x", 0, inner, &[])).is_err() {
                refused = true;
                break;
            }
            inner = t;
        }
        assert!(refused);
        assert!(types.record_of(inner).unwrap().plan().is_ok());
    }

    #[test]
    fn types_nested_by_reference_cannot_stand_for_enormous_records() {
        let mut types = UserTypes::default();
        let leaf = types.define(GroupId(0), "t0", 64).unwrap();
        for i in 0..64 {
            types
                .insert(leaf, field(&format!("f{i}"), i, NcType::UByte.id(), &[]))
                .unwrap();
        }
        let mid = types.define(GroupId(0), "t1", 64 * 1024).unwrap();
        for i in 0..1024 {
            types
                .insert(mid, field(&format!("f{i}"), 64 * i, leaf, &[]))
                .unwrap();
        }
        let top = types.define(GroupId(0), "t2", 8 * 64 * 1024).unwrap();
        let mut refused = false;
        for i in 0..8 {
            if types
                .insert(top, field(&format!("f{i}"), 64 * 1024 * i, mid, &[]))
                .is_err()
            {
                refused = true;
                break;
            }
        }
        assert!(refused, "8 * 1024 * 64 atomic fields");
    }

    #[test]
    fn a_stored_record_fits_the_type_declared_for_it_or_none() {
        let (byte, short, int, double) = (
            NcType::UByte.id(),
            NcType::Short.id(),
            NcType::Int.id(),
            NcType::Double.id(),
        );
        let mut types = UserTypes::default();
        let d = defined(
            &mut types,
            "d_t",
            8,
            &[("y", 0, int, &[]), ("x", 4, byte, &[])],
        );
        let outer = [
            ("c", 8, short, &[3][..]),
            ("b", 16, double, &[]),
            ("a", 24, byte, &[]),
        ];
        let outer = defined(
            &mut types,
            "rec_t",
            40,
            &[&[("d", 0, d, &[][..])][..], &outer].concat(),
        );
        let fitted = types.fit(outer, &record()).unwrap();
        let names: Vec<_> = fitted.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["d", "c", "b", "a"]);
        assert_eq!(fitted.memory_offsets().unwrap(), vec![0, 8, 16, 24]);
        assert_eq!(fitted.memory_size().unwrap(), 40);
        assert_eq!(fitted.fields[0].stored_offset, 15);
        assert_eq!(
            placed(&fitted.plan().unwrap()),
            vec![(16, 0, 1), (15, 4, 1), (9, 8, 3), (1, 16, 1), (0, 24, 1)]
        );

        let wrong = [
            ("c", 8, int, &[3][..]),
            ("b", 24, double, &[]),
            ("a", 32, byte, &[]),
        ];
        let wrong = defined(
            &mut types,
            "wrong_t",
            40,
            &[&[("d", 0, d, &[][..])][..], &wrong].concat(),
        );
        assert!(types.fit(wrong, &record()).is_none(), "c is short, not int");
        assert!(types.fit(d, &record()).is_none());
    }

    #[test]
    fn declarations_are_listed_after_the_types_they_name_or_not_at_all() {
        let f = |name: &str, offset, type_name: &str| DeclaredField {
            name: name.into(),
            offset,
            type_name: type_name.into(),
            dims: Vec::new(),
        };
        let decl = |name: &str, size, fields: Vec<DeclaredField>| DeclaredType {
            group: GroupId(0),
            name: name.into(),
            size,
            fields,
            class: TypeClass::Compound,
        };
        let declared = vec![
            // Named before the type it holds, as a program may define it.
            decl("outer", 16, vec![f("t", 8, "/t")]),
            decl("empty", 8, vec![]),
            decl("overlap", 8, vec![f("a", 0, "int"), f("b", 2, "int")]),
            decl("lost", 8, vec![f("a", 0, "/nowhere")]),
            decl("t", 8, vec![f("a", 0, "int"), f("b", 4, "float")]),
            decl("loop_a", 8, vec![f("b", 0, "/loop_b")]),
            decl("loop_b", 8, vec![f("a", 0, "/loop_a")]),
            decl("uses_broken", 8, vec![f("o", 0, "/overlap")]),
        ];
        let names: Vec<String> = declared.iter().map(|d| format!("/{}", d.name)).collect();
        let mut types = UserTypes::default();
        let listed = types.declare_all(&declared, &names);
        let mut listed: Vec<_> = listed.into_iter().collect();
        listed.sort();
        assert_eq!(
            listed,
            vec![
                ("/outer".to_string(), FIRST_USER_TYPE + 1),
                ("/t".to_string(), FIRST_USER_TYPE)
            ]
        );
        let outer = types.get(FIRST_USER_TYPE + 1).unwrap();
        assert_eq!((outer.depth, outer.open, outer.implicit), (2, false, false));
        assert_eq!(outer.fields[0].type_id, FIRST_USER_TYPE);
        assert_eq!(types.types.len(), 2);
    }

    #[test]
    fn a_long_chain_of_declarations_given_backwards_is_listed() {
        let n = 3000;
        let declared: Vec<DeclaredType> = (0..n)
            .map(|i| DeclaredType {
                group: GroupId(0),
                name: format!("t{i}"),
                size: 1,
                fields: vec![DeclaredField {
                    name: "x".into(),
                    offset: 0,
                    type_name: if i + 1 == n {
                        "ubyte".into()
                    } else {
                        format!("/t{}", i + 1)
                    },
                    dims: Vec::new(),
                }],
                class: TypeClass::Compound,
            })
            .collect();
        let names: Vec<String> = declared.iter().map(|d| format!("/{}", d.name)).collect();
        let mut types = UserTypes::default();
        let listed = types.declare_all(&declared, &names);
        // Nested 16 deep at most: the last 16 of the chain.
        assert_eq!(listed.len(), 16);
        assert!(listed.contains_key(&format!("/t{}", n - 16)));
    }

    #[test]
    fn enum_types_take_members_until_the_definitions_end_and_are_declared_whole() {
        let mut types = UserTypes::default();
        let g = GroupId(0);
        assert!(matches!(
            types.define_enum(g, "f_t", NcType::Float),
            Err(Error::BadType(_))
        ));
        let id = types.define_enum(g, "cloud_t", NcType::UByte).unwrap();
        assert!(types.check_enums_have_members().is_err());
        types.insert_enum(id, "clear", 0).unwrap();
        types.insert_enum(id, "missing", 255).unwrap();
        types.check_enums_have_members().unwrap();
        assert_eq!(types.get(id).unwrap().size, 1);
        // No fields go into an enum type.
        let field = |type_id| TypeField {
            name: "x".into(),
            offset: 0,
            type_id,
            dims: Vec::new(),
        };
        assert!(matches!(types.insert(id, field(4)), Err(Error::BadType(_))));
        // A compound type holds enum fields (stored as the base), and the enum type takes
        // members still.
        let c = types.define(g, "c_t", 8).unwrap();
        types.insert(c, field(id)).unwrap();
        types.insert_enum(id, "cumulus", 1).unwrap();
        assert_eq!(
            types.record_of(c).unwrap().fields[0].kind.atomic(),
            Some(NcType::UByte)
        );
        assert!(matches!(
            types.insert_enum(c, "a", 1),
            Err(Error::BadType(_))
        ));
        types.close_all();
        assert!(matches!(
            types.insert_enum(id, "late", 3),
            Err(Error::TypeDefined(_))
        ));
        let e = types.enumeration(id).unwrap().clone();
        let enum_decl = |name: &str, e: Enumeration| DeclaredType {
            group: g,
            name: name.into(),
            size: 1,
            fields: Vec::new(),
            class: TypeClass::Enum(e),
        };
        let declared = vec![
            enum_decl("cloud_t", e.clone()),
            enum_decl("empty_t", Enumeration::new(NcType::Int).unwrap()),
            // Named as the type before it.
            enum_decl("cloud_t", e.clone()),
        ];
        let names: Vec<String> = declared.iter().map(|d| format!("/{}", d.name)).collect();
        let mut read = UserTypes::default();
        let listed = read.declare_all(&declared, &names);
        assert_eq!(listed.len(), 1);
        let t = read.get(listed["/cloud_t"]).unwrap();
        assert_eq!((t.enumeration(), t.open), (Some(&e), false));
        assert_eq!(read.types.len(), 1);
    }

    #[test]
    fn enum_fields_are_stored_as_their_base_and_fitted_back_whatever_the_order_given() {
        let g = GroupId(0);
        let enum_decl = |name: &str, base: NcType| {
            let mut e = Enumeration::new(base).unwrap();
            e.insert("a", 1).unwrap();
            DeclaredType {
                group: g,
                name: name.into(),
                size: base.size(),
                fields: Vec::new(),
                class: TypeClass::Enum(e),
            }
        };
        let compound = DeclaredType {
            group: g,
            name: "c_t".into(),
            size: 4,
            fields: vec![
                DeclaredField {
                    name: "id".into(),
                    offset: 0,
                    type_name: "short".into(),
                    dims: Vec::new(),
                },
                DeclaredField {
                    name: "e".into(),
                    offset: 2,
                    type_name: "/sub/e_t".into(),
                    dims: vec![2],
                },
            ],
            class: TypeClass::Compound,
        };
        // The compound type named before the enum type it holds, of another group.
        let declared = vec![compound, enum_decl("e_t", NcType::UByte)];
        let names = vec!["/c_t".to_string(), "/sub/e_t".to_string()];
        let mut types = UserTypes::default();
        let listed = types.declare_all(&declared, &names);
        let (c, e) = (listed["/c_t"], listed["/sub/e_t"]);
        assert_eq!(types.get(c).unwrap().fields[1].type_id, e);
        let stored = types.record_of(c).unwrap();
        assert_eq!(stored.fields[1].kind.atomic(), Some(NcType::UByte));
        assert_eq!(stored.stored_size, 4);
        assert!(types.fit(c, &stored).is_some());
        // A stored field of another type than the enum's base does not fit.
        let mut wider = stored.clone();
        wider.fields[1].kind = FieldKind::Number {
            ty: NcType::Short,
            endian: Endian::native(),
        };
        assert!(types.fit(c, &wider).is_none());
    }

    #[test]
    fn opaque_types_hold_bytes_and_fit_raw_records_of_their_size() {
        let mut types = UserTypes::default();
        let g = GroupId(0);
        let raw = types.define_opaque(g, "raw_t", 3).unwrap();
        for (name, size) in [
            ("raw_t", 3),
            ("none_t", 0),
            ("huge_t", MOST_RECORD_BYTES + 1),
        ] {
            assert!(
                types.define_opaque(g, name, size).is_err(),
                "{name} of {size}"
            );
        }
        // No fields, no members.
        let int = NcType::Int.id();
        assert!(matches!(
            types.insert(raw, field("x", 0, int, &[])),
            Err(Error::BadType(id)) if id == raw
        ));
        assert!(matches!(
            types.insert_enum(raw, "x", 1),
            Err(Error::BadType(id)) if id == raw
        ));
        // Its values are stored as raw bytes, and only raw bytes of its size fit it.
        assert_eq!(types.record_of(raw).unwrap(), Record::raw(3));
        assert_eq!(types.fit(raw, &Record::raw(3)), Some(Record::raw(3)));
        assert_eq!(types.fit(raw, &Record::raw(4)), None);
        // An opaque field is stored as its bytes and fitted back to its type.
        let obs = types.define(g, "obs_t", 8).unwrap();
        types.insert(obs, field("id", 0, int, &[])).unwrap();
        types.insert(obs, field("tag", 4, raw, &[])).unwrap();
        let stored = types.record_of(obs).unwrap();
        assert_eq!(
            (stored.fields[1].dims.as_slice(), stored.stored_size),
            (&[3][..], 7)
        );
        let read = Record {
            memory: None,
            ..stored.clone()
        };
        assert_eq!(types.fit(obs, &read), Some(stored));
        assert_eq!(types.fit(raw, &read), None);
        // Raw bytes no definition gives are of an opaque type named after their variable.
        let id = types.add(&Record::raw(5), g, "tags", &|_| false).unwrap();
        let t = types.get(id).unwrap();
        assert_eq!(
            (t.name.as_str(), t.size, t.is_opaque(), t.implicit),
            ("tags_t", 5, true, true)
        );
    }
}
