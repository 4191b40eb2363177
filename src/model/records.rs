//! Records: the fields a numpy structured dtype stores, and how their compound values sit in
//! memory.
//!
//! Owns a record's field tree ([`Record`]), the layout of its compound values in memory (the
//! one its compound type's definition gives, or else each field at the next offset its
//! alignment allows, as a C compiler places a struct's members, the layout netcdf-c gives the
//! compound types of files it did not write) and the plan that moves one into the other. The
//! compound types themselves are [`super::user_types`]'s. A record without fields is raw bytes
//! (numpy's void dtype), the values of an opaque type, moved as they are. Knows nothing of
//! JSON, stores or C.

use super::tree::Endian;
use super::types::NcType;
use crate::codec::{FieldOp, Move, RecordPlan};
use crate::error::{Error, Result};
use std::sync::Arc;

/// The most moves the plan of one record may make (each field of a nested record in a
/// subarray is one per element).
const MOST_MOVES: usize = 1 << 16;

/// The largest record served, stored (and, four times that, in memory): a chunk holds many.
pub const MOST_RECORD_BYTES: usize = 1 << 20;

/// The fields of one stored record, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub fields: Vec<RecordField>,
    /// Bytes of one stored record (numpy's `itemsize`: the fields packed).
    pub stored_size: usize,
    /// Where the fields sit in a compound value, when a type's definition says (else the C
    /// layout).
    pub memory: Option<MemoryLayout>,
}

/// The layout a compound type's definition gives its values.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryLayout {
    /// Each field's offset, in the record's field order.
    pub offsets: Vec<usize>,
    /// Bytes of one value.
    pub size: usize,
}

/// One field of a stored record.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordField {
    pub name: String,
    /// Byte offset in the stored record.
    pub stored_offset: usize,
    /// The field's subarray shape (empty for one value); for text, its last entry is the
    /// length in bytes.
    pub dims: Vec<usize>,
    pub kind: FieldKind,
}

/// What one value of a field stores.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldKind {
    /// A number of netCDF type `ty` (numpy's bool: `ubyte`) in this byte order.
    Number { ty: NcType, endian: Endian },
    /// A 16-bit float, served as `float`.
    Half { endian: Endian },
    /// A byte of text (`|S<n>`), served as `char`.
    Char,
    /// numpy unicode text of `chars` code points, served as `char` UTF-8 text of `4 * chars`
    /// bytes.
    Ucs4 { chars: usize, endian: Endian },
    /// A nested record, served as a compound type of its own.
    Nested(Record),
}

/// Size and alignment of a value in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Placement {
    size: usize,
    align: usize,
}

fn round_up(n: usize, align: usize) -> Result<usize> {
    n.checked_next_multiple_of(align.max(1))
        .ok_or_else(|| too_large("a record"))
}

pub(super) fn too_large(what: &str) -> Error {
    Error::Unsupported {
        var: String::new(),
        why: format!("{what} too large for a compound type"),
    }
}

pub(super) fn count(dims: &[usize]) -> Result<usize> {
    dims.iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .ok_or_else(|| too_large("a field's subarray"))
}

impl FieldKind {
    /// The netCDF type of one value in memory (`None` for a nested record).
    pub fn atomic(&self) -> Option<NcType> {
        match self {
            FieldKind::Number { ty, .. } => Some(*ty),
            FieldKind::Half { .. } => Some(NcType::Float),
            FieldKind::Char | FieldKind::Ucs4 { .. } => Some(NcType::Char),
            FieldKind::Nested(_) => None,
        }
    }

    fn placement(&self) -> Result<Placement> {
        Ok(match self {
            FieldKind::Number { ty, .. } => Placement {
                size: ty.size(),
                align: ty.size(),
            },
            FieldKind::Half { .. } => Placement { size: 4, align: 4 },
            FieldKind::Char => Placement { size: 1, align: 1 },
            FieldKind::Ucs4 { chars, .. } => Placement {
                size: chars.checked_mul(4).ok_or_else(|| too_large("a text"))?,
                align: 1,
            },
            FieldKind::Nested(r) => r.placement()?,
        })
    }
}

impl RecordField {
    /// The field's dimensions as the compound type lists them: for numpy unicode text, the
    /// bytes of its UTF-8 slot last.
    pub fn memory_dims(&self) -> Vec<usize> {
        let mut dims = self.dims.clone();
        if let FieldKind::Ucs4 { chars, .. } = self.kind {
            dims.push(chars.saturating_mul(4));
        }
        dims
    }

    /// Values the field holds (its subarray's elements; one per text, for numpy unicode).
    fn values(&self) -> Result<usize> {
        count(&self.dims)
    }
}

impl Record {
    /// A record without fields: `size` raw bytes (a numpy void dtype, `|V<size>`), served as
    /// values of an opaque type, moved as they are.
    pub fn raw(size: usize) -> Record {
        Record {
            fields: Vec::new(),
            stored_size: size,
            memory: None,
        }
    }

    /// Raw bytes (no fields): values of an opaque type.
    pub fn is_raw(&self) -> bool {
        self.fields.is_empty()
    }

    fn placement(&self) -> Result<Placement> {
        let (_, size, align) = self.layout()?;
        Ok(Placement { size, align })
    }

    /// Each field's offset in a compound value, the value's size and its alignment.
    fn layout(&self) -> Result<(Vec<usize>, usize, usize)> {
        if self.is_raw() {
            return Ok((Vec::new(), self.stored_size, 1));
        }
        if let Some(given) = &self.memory {
            if given.offsets.len() != self.fields.len() || given.size > 4 * MOST_RECORD_BYTES {
                return Err(too_large("a record"));
            }
            let mut align = 1usize;
            for f in &self.fields {
                align = align.max(f.kind.placement()?.align);
            }
            return Ok((given.offsets.clone(), given.size, align));
        }
        let mut at = 0usize;
        let mut align = 1usize;
        let mut offsets = Vec::with_capacity(self.fields.len());
        for f in &self.fields {
            let p = f.kind.placement()?;
            at = round_up(at, p.align)?;
            offsets.push(at);
            let bytes = p
                .size
                .checked_mul(f.values()?)
                .ok_or_else(|| too_large("a field"))?;
            at = at.checked_add(bytes).ok_or_else(|| too_large("a record"))?;
            align = align.max(p.align);
        }
        let size = round_up(at.max(1), align)?;
        if size > 4 * MOST_RECORD_BYTES {
            return Err(too_large("a record"));
        }
        Ok((offsets, size, align))
    }

    /// Whether its values, and those of its nested records, sit in memory as a C compiler
    /// lays out a struct of its fields in their order (as they are served when nothing says
    /// otherwise).
    pub fn has_c_layout(&self) -> Result<bool> {
        for f in &self.fields {
            if let FieldKind::Nested(inner) = &f.kind
                && !inner.has_c_layout()?
            {
                return Ok(false);
            }
        }
        let Some(given) = &self.memory else {
            return Ok(true);
        };
        let c = Record {
            memory: None,
            ..self.clone()
        };
        let (offsets, size, _) = c.layout()?;
        Ok(offsets == given.offsets && size == given.size)
    }

    /// Bytes of one compound value in memory.
    pub fn memory_size(&self) -> Result<usize> {
        Ok(self.layout()?.1)
    }

    /// Each field's offset in a compound value.
    pub fn memory_offsets(&self) -> Result<Vec<usize>> {
        Ok(self.layout()?.0)
    }

    /// What moves where between a stored record and a compound value; an error when the
    /// record names more values than [`MOST_MOVES`] or does not fit its stored size.
    pub fn plan(&self) -> Result<RecordPlan> {
        let mut moves = Vec::new();
        self.add_moves(0, 0, &mut moves)?;
        Ok(RecordPlan {
            stored_size: self.stored_size,
            memory_size: self.memory_size()?,
            moves,
        })
    }

    fn add_moves(&self, stored: usize, memory: usize, moves: &mut Vec<Move>) -> Result<()> {
        let (offsets, memory_size, _) = self.layout()?;
        if self.stored_size == 0 || self.stored_size > MOST_RECORD_BYTES {
            return Err(Error::Unsupported {
                var: String::new(),
                why: format!("a record of {} bytes", self.stored_size),
            });
        }
        let record_end = stored
            .checked_add(self.stored_size)
            .ok_or_else(|| too_large("a record"))?;
        if self.is_raw() {
            moves.push(Move {
                stored,
                memory,
                count: 1,
                op: FieldOp::Copy {
                    size: self.stored_size,
                },
            });
            return Ok(());
        }
        for (f, &offset) in self.fields.iter().zip(&offsets) {
            let n = f.values()?;
            let from = stored
                .checked_add(f.stored_offset)
                .ok_or_else(|| too_large("a record"))?;
            let to = memory + offset;
            let op = match &f.kind {
                FieldKind::Nested(_) => None,
                FieldKind::Number { ty, endian }
                    if ty.size() > 1 && *endian != Endian::native() =>
                {
                    Some(FieldOp::Swap { size: ty.size() })
                }
                FieldKind::Number { ty, .. } => Some(FieldOp::Copy { size: ty.size() }),
                FieldKind::Half { endian } => Some(FieldOp::Half {
                    big: *endian == Endian::Big,
                }),
                FieldKind::Char => Some(FieldOp::Copy { size: 1 }),
                FieldKind::Ucs4 { chars, endian } => Some(FieldOp::Ucs4 {
                    chars: *chars,
                    big: *endian == Endian::Big,
                }),
            };
            let value_size = match (&f.kind, op) {
                (FieldKind::Nested(inner), _) => inner.stored_size,
                (_, Some(op)) => op.stored_size(),
                (_, None) => 0,
            };
            let end = value_size
                .checked_mul(n)
                .and_then(|b| b.checked_add(from))
                .ok_or_else(|| too_large("a field"))?;
            let memory_value_size = match (&f.kind, op) {
                (FieldKind::Nested(inner), _) => inner.memory_size()?,
                (_, Some(op)) => op.memory_size(),
                (_, None) => 0,
            };
            let memory_end = memory_value_size
                .checked_mul(n)
                .and_then(|b| b.checked_add(offset))
                .ok_or_else(|| too_large("a field"))?;
            if end > record_end || memory_end > memory_size {
                return Err(Error::Unsupported {
                    var: String::new(),
                    why: format!("field {:?} ends past its record", f.name),
                });
            }
            if moves.len() > MOST_MOVES {
                return Err(too_large("a record of so many fields"));
            }
            match (&f.kind, op) {
                (FieldKind::Nested(inner), _) => {
                    let size = inner.memory_size()?;
                    if n > MOST_MOVES {
                        return Err(too_large("a record of so many fields"));
                    }
                    for k in 0..n {
                        if moves.len() > MOST_MOVES {
                            return Err(too_large("a record of so many fields"));
                        }
                        inner.add_moves(from + k * inner.stored_size, to + k * size, moves)?;
                    }
                }
                (_, Some(op)) => moves.push(Move {
                    stored: from,
                    memory: to,
                    count: n,
                    op,
                }),
                (_, None) => {}
            }
        }
        Ok(())
    }
}

/// How a variable's values are records: what they store, the plan that serves them and the
/// id of their compound type (set when the dataset's types are listed).
#[derive(Debug, Clone, PartialEq)]
pub struct VarRecord {
    pub record: Arc<Record>,
    pub plan: Arc<RecordPlan>,
    pub type_id: i32,
    /// The array's `dtype` and `fill_value` as its Zarr v2 metadata gives them, written back
    /// as they are (a bool field stays a bool, a padded dtype keeps its padding).
    pub stored_dtype: Option<Arc<(serde_json::Value, serde_json::Value)>>,
    /// The full name of the compound type the dataset's metadata says the values are of
    /// (NCZarr keeps the types a dataset defines), when it says.
    pub declared_type: Option<String>,
}

impl VarRecord {
    /// The record and its plan, or why its values cannot be served.
    pub fn new(record: Record) -> Result<VarRecord> {
        let plan = record.plan()?;
        Ok(VarRecord {
            record: Arc::new(record),
            plan: Arc::new(plan),
            type_id: 0,
            stored_dtype: None,
            declared_type: None,
        })
    }

    /// Compound values as their records are stored (the error of text they cannot hold).
    pub fn stored_form(&self, values: &[u8]) -> Result<Vec<u8>> {
        use crate::codec::{Codec, Records};
        let narrow = Records {
            plan: self.plan.clone(),
        };
        let mut stored = Vec::new();
        narrow.encode_into(values, &mut stored)?;
        Ok(stored)
    }

    /// Stored records as compound values (the error of bytes that are no whole records).
    pub fn memory_form(&self, stored: &[u8]) -> Result<Vec<u8>> {
        use crate::codec::{Codec, Records};
        let widen = Records {
            plan: self.plan.clone(),
        };
        let records = stored.len() / self.plan.stored_size.max(1);
        widen.decode(stored, records.saturating_mul(self.plan.memory_size))
    }

    /// A compound value laid out as this record's values are, laid out as `other`'s (the same
    /// stored record served under another type), or `None` when it cannot be stored.
    pub fn relaid(&self, value: &[u8], other: &VarRecord) -> Option<Vec<u8>> {
        other.memory_form(&self.stored_form(value).ok()?).ok()
    }
}

#[cfg(test)]
pub(super) mod fixtures {
    use super::*;

    /// Where each move of `plan` goes: (stored offset, memory offset, count).
    pub fn placed(plan: &RecordPlan) -> Vec<(usize, usize, usize)> {
        plan.moves
            .iter()
            .map(|m| (m.stored, m.memory, m.count))
            .collect()
    }

    pub fn number(name: &str, stored_offset: usize, ty: NcType, endian: Endian) -> RecordField {
        RecordField {
            name: name.into(),
            stored_offset,
            dims: Vec::new(),
            kind: FieldKind::Number { ty, endian },
        }
    }

    /// numpy `[('a','u1'),('b','<f8'),('c','>i2',(3,)),('d',[('x','u1'),('y','<i4')])]`:
    /// stored packed in 1 + 8 + 6 + 5 = 20 bytes.
    pub fn record() -> Record {
        let inner = Record {
            fields: vec![
                number("x", 0, NcType::UByte, Endian::Little),
                number("y", 1, NcType::Int, Endian::Little),
            ],
            stored_size: 5,
            memory: None,
        };
        let mut c = number("c", 9, NcType::Short, Endian::Big);
        c.dims = vec![3];
        Record {
            fields: vec![
                number("a", 0, NcType::UByte, Endian::Little),
                number("b", 1, NcType::Double, Endian::Little),
                c,
                RecordField {
                    name: "d".into(),
                    stored_offset: 15,
                    dims: Vec::new(),
                    kind: FieldKind::Nested(inner),
                },
            ],
            stored_size: 20,
            memory: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::{placed, record};
    use super::*;

    #[test]
    fn raw_bytes_move_as_they_are_and_records_do_not() {
        let raw = Record::raw(5);
        assert_eq!(
            (raw.memory_size().unwrap(), raw.has_c_layout().unwrap()),
            (5, true)
        );
        let plan = raw.plan().unwrap();
        assert!(plan.is_identity(), "{plan:?}");
        assert!(!record().plan().unwrap().is_identity());
        assert!(Record::raw(MOST_RECORD_BYTES + 1).plan().is_err());
    }

    #[test]
    fn fields_are_placed_as_a_c_struct_places_them() {
        let r = record();
        // a at 0, b at 8, c (3 shorts) at 16, d (8 bytes, aligned 4) at 24: 32 bytes.
        assert_eq!(r.memory_offsets().unwrap(), vec![0, 8, 16, 24]);
        assert_eq!(r.memory_size().unwrap(), 32);
        let plan = r.plan().unwrap();
        assert_eq!(plan.stored_size, 20);
        assert_eq!(
            placed(&plan),
            vec![(0, 0, 1), (1, 8, 1), (9, 16, 3), (15, 24, 1), (16, 28, 1)]
        );
        assert_eq!(
            plan.moves[2].op,
            if Endian::native() == Endian::Big {
                FieldOp::Copy { size: 2 }
            } else {
                FieldOp::Swap { size: 2 }
            }
        );
    }

    #[test]
    fn a_layout_a_definition_gives_is_kept_and_must_hold_its_fields() {
        let mut r = record();
        // Packed, the nested record (C layout: 8 bytes) last.
        assert!(r.has_c_layout().unwrap());
        r.memory = Some(MemoryLayout {
            offsets: vec![0, 8, 16, 24],
            size: 32,
        });
        assert!(r.has_c_layout().unwrap());
        r.memory = Some(MemoryLayout {
            offsets: vec![0, 1, 9, 15],
            size: 23,
        });
        assert!(!r.has_c_layout().unwrap());
        assert_eq!(r.memory_size().unwrap(), 23);
        let plan = r.plan().unwrap();
        assert_eq!(
            placed(&plan),
            vec![(0, 0, 1), (1, 1, 1), (9, 9, 3), (15, 15, 1), (16, 19, 1)]
        );
        r.memory = Some(MemoryLayout {
            offsets: vec![0, 1, 9, 15],
            size: 22,
        });
        assert!(r.plan().is_err(), "the nested record ends past the value");
        r.memory = Some(MemoryLayout {
            offsets: vec![0, 1, 9],
            size: 64,
        });
        assert!(r.plan().is_err(), "an offset for every field");
    }

    #[test]
    fn fields_past_the_record_and_absurd_subarrays_are_refused() {
        let mut r = record();
        r.stored_size = 19;
        assert!(r.plan().is_err());
        let mut r = record();
        r.fields[2].dims = vec![usize::MAX, 4];
        assert!(r.plan().is_err());
        let mut r = record();
        if let FieldKind::Nested(inner) = &r.fields[3].kind {
            let inner = inner.clone();
            r.fields[3].dims = vec![1 << 20];
            r.fields[3].kind = FieldKind::Nested(inner);
            r.stored_size = 15 + 5 * (1 << 20);
        }
        assert!(
            r.plan().is_err(),
            "a million nested records are too many moves"
        );
    }
}
