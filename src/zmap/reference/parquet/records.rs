//! One record file of a Parquet reference set, decoded into rows.
//!
//! Owns the columns as fsspec writes them (with fastparquet or pyarrow): `path` (text, null
//! where no target is named), `offset` and `size` (whole numbers), `raw` (bytes, null where
//! the chunk is not inline). A column left out is all null (or 0); a column of another type is
//! accepted only when every value of it is null, as pandas writes a column of nothing but
//! nulls. Before the decoder reads a column, its codec must be one whose output is bounded by
//! the size a page declares, and its [`pages`](super::pages) must declare no more than a
//! record can hold. It must not know where the targets lead.

use super::pages::{Bounds, check_chunk};
use bytes::Bytes;
use parquet::basic::{Compression, Type as Physical};
use parquet::column::reader::{ColumnReader, ColumnReaderImpl};
use parquet::data_type::DataType;
use parquet::file::reader::{FileReader, SerializedFileReader};
use std::collections::HashMap;

/// One row: what one chunk holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Row {
    /// No chunk: never written.
    Missing,
    /// These bytes.
    Inline(Bytes),
    /// The whole object at URL number `url`.
    Whole { url: u32 },
    /// `len` bytes from `offset` of the object at URL number `url`.
    Range { url: u32, offset: u64, len: u64 },
}

/// A decoded record: its rows, and the URLs they name, each once.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Decoded {
    pub rows: Vec<Row>,
    pub urls: Vec<String>,
}

/// A column's reader, and the definition level of its values that are not null.
type Column = (ColumnReader, i16);

/// Values read from the decoder at a time.
const BATCH: usize = 8192;

/// Bytes the pages of one record may decompress to, together (kerchunk's records of 100 000
/// references take a few tens of MiB).
const MOST_DECOMPRESSED: u64 = 256 << 20;

/// [`decode`], a panic of the decoder (another crate's) taken for a file it cannot read.
pub fn decode_record(file: Bytes, most_rows: usize, record_size: usize) -> Result<Decoded, String> {
    std::panic::catch_unwind(|| decode(file, most_rows, record_size))
        .unwrap_or_else(|_| Err("the Parquet decoder failed on it".into()))
}

/// The first `most_rows` rows (at most) of the Parquet file `file`, a record of a set of
/// `record_size` rows each; why not, when it cannot be read as a record.
fn decode(file: Bytes, most_rows: usize, record_size: usize) -> Result<Decoded, String> {
    let shown = |e: parquet::errors::ParquetError| format!("not a readable Parquet file: {e}");
    let reader = SerializedFileReader::new(file.clone()).map_err(shown)?;
    let metadata = reader.metadata();
    let schema = metadata.file_metadata().schema_descr();
    let column = |name: &str| -> Result<Option<usize>, String> {
        let at = schema
            .columns()
            .iter()
            .position(|c| c.path().string() == name);
        if let Some(i) = at
            && schema.column(i).max_rep_level() > 0
        {
            return Err(format!("its column {name:?} holds lists"));
        }
        Ok(at)
    };
    let (path_at, offset_at, size_at, raw_at) = (
        column("path")?,
        column("offset")?,
        column("size")?,
        column("raw")?,
    );
    let mut out = Decoded::default();
    let mut url_numbers: HashMap<String, u32> = HashMap::new();
    let mut decompressed = 0u64;
    let mut value_budget = MOST_DECOMPRESSED;
    let read_columns: Vec<usize> = [path_at, offset_at, size_at, raw_at]
        .into_iter()
        .flatten()
        .collect();
    for group in 0..metadata.num_row_groups() {
        if out.rows.len() >= most_rows {
            break;
        }
        let group_meta = metadata.row_group(group);
        let rows_here = usize::try_from(group_meta.num_rows())
            .map_err(|_| "a row group declares a negative number of rows".to_string())?;
        let n = rows_here.min(most_rows - out.rows.len());
        for &i in &read_columns {
            let bounds = Bounds {
                decompressed: MOST_DECOMPRESSED - decompressed,
                dictionary_values: record_size as u64,
                value_width: value_width(group_meta.column(i).column_type()),
            };
            decompressed += checked_column(&file, group_meta.column(i), &bounds)?;
        }
        let group = reader.get_row_group(group).map_err(shown)?;
        // A column's reader, and the definition level of its values that are not null.
        let read = |at: Option<usize>, name: &str| -> Result<Option<Column>, String> {
            at.map(|i| {
                let max_def = schema.column(i).max_def_level();
                group.get_column_reader(i).map(|r| (r, max_def))
            })
            .transpose()
            .map_err(|e| format!("column {name:?}: {e}"))
        };
        let paths = match read(path_at, "path")? {
            Some(r) => texts(r, n, "path", &mut value_budget)?,
            None => vec![None; n],
        };
        let offsets = match read(offset_at, "offset")? {
            Some(r) => whole_numbers(r, n, "offset")?,
            None => vec![0; n],
        };
        let sizes = match read(size_at, "size")? {
            Some(r) => whole_numbers(r, n, "size")?,
            None => vec![0; n],
        };
        let raws = match read(raw_at, "raw")? {
            Some(r) => bytes(r, n, "raw", &mut value_budget)?,
            None => vec![None; n],
        };
        if [paths.len(), offsets.len(), sizes.len(), raws.len()] != [n; 4] {
            return Err(format!(
                "a row group says it has {n} rows, but its columns hold fewer"
            ));
        }
        for (((path, offset), size), raw) in paths.into_iter().zip(offsets).zip(sizes).zip(raws) {
            let row = match (raw, path) {
                // As fsspec reads a row: inline bytes first, then the target.
                (Some(raw), _) => Row::Inline(raw),
                (None, None) => Row::Missing,
                (None, Some(path)) => {
                    let next = out.urls.len() as u32;
                    let url = *url_numbers.entry(path).or_insert_with_key(|path| {
                        out.urls.push(path.clone());
                        next
                    });
                    match (u64::try_from(offset), u64::try_from(size)) {
                        _ if offset == 0 && size == 0 => Row::Whole { url },
                        (Ok(offset), Ok(len)) if offset.checked_add(len).is_some() => {
                            Row::Range { url, offset, len }
                        }
                        _ => {
                            return Err(format!(
                                "row {}: {size} bytes from {offset} name no bytes of any object",
                                out.rows.len()
                            ));
                        }
                    }
                }
            };
            out.rows.push(row);
        }
    }
    Ok(out)
}

/// The fewest bytes one value of `kind` takes in a plain-encoded dictionary page.
fn value_width(kind: Physical) -> u64 {
    match kind {
        Physical::INT64 | Physical::DOUBLE => 8,
        Physical::INT96 => 12,
        Physical::INT32 | Physical::FLOAT | Physical::BYTE_ARRAY => 4,
        Physical::BOOLEAN | Physical::FIXED_LEN_BYTE_ARRAY => 1,
    }
}

/// Checks column chunk `column` of `file` before the decoder reads it: its codec, and its
/// pages' declarations against `bounds`; returns the bytes its pages decompress to.
fn checked_column(
    file: &Bytes,
    column: &parquet::file::metadata::ColumnChunkMetaData,
    bounds: &Bounds,
) -> Result<u64, String> {
    let name = column.column_path().string();
    match column.compression() {
        Compression::UNCOMPRESSED | Compression::SNAPPY | Compression::ZSTD(_) => {}
        Compression::LZ4_RAW => {}
        // Their decoders write as much as the data makes, whatever a page declares.
        other => {
            return Err(format!(
                "its column {name:?} is compressed with {other:?}, which is not read (zstd, \
                 snappy, lz4_raw or none are)"
            ));
        }
    }
    let start = column
        .dictionary_page_offset()
        .unwrap_or_else(|| column.data_page_offset());
    let chunk = u64::try_from(start)
        .ok()
        .zip(u64::try_from(column.compressed_size()).ok())
        .and_then(|(start, len)| Some((usize::try_from(start).ok()?, usize::try_from(len).ok()?)))
        .and_then(|(start, len)| file.get(start..start.checked_add(len)?))
        .ok_or_else(|| format!("its column {name:?} lies outside the file"))?;
    check_chunk(chunk, bounds).map_err(|why| format!("its column {name:?}: {why}"))
}

/// Up to `n` values of a column, `None` where null.
fn values<T: DataType>(
    mut reader: ColumnReaderImpl<T>,
    max_def: i16,
    n: usize,
) -> parquet::errors::Result<Vec<Option<T::T>>> {
    let nullable = max_def > 0;
    let mut out = Vec::with_capacity(n.min(BATCH));
    let (mut defs, mut got) = (Vec::new(), Vec::new());
    while out.len() < n {
        defs.clear();
        got.clear();
        let want = (n - out.len()).min(BATCH);
        let (records, _, _) = if nullable {
            reader.read_records(want, Some(&mut defs), None, &mut got)?
        } else {
            reader.read_records(want, None, None, &mut got)?
        };
        if records == 0 {
            break;
        }
        if nullable {
            let mut present = got.drain(..);
            for &d in &defs {
                out.push(if d == max_def { present.next() } else { None });
            }
        } else {
            out.extend(got.drain(..).map(Some));
        }
    }
    Ok(out)
}

/// Up to `n` values of a column that must hold nothing: how many there are, all `None`.
fn nulls((reader, max_def): Column, n: usize, name: &str) -> Result<usize, String> {
    fn none<T: DataType>(
        r: ColumnReaderImpl<T>,
        max_def: i16,
        n: usize,
        name: &str,
    ) -> Result<usize, String> {
        let got = values(r, max_def, n).map_err(|e| format!("column {name:?}: {e}"))?;
        if got.iter().any(Option::is_some) {
            return Err(format!(
                "its column {name:?} holds values of the wrong type"
            ));
        }
        Ok(got.len())
    }
    match reader {
        ColumnReader::BoolColumnReader(r) => none(r, max_def, n, name),
        ColumnReader::Int32ColumnReader(r) => none(r, max_def, n, name),
        ColumnReader::Int64ColumnReader(r) => none(r, max_def, n, name),
        ColumnReader::Int96ColumnReader(r) => none(r, max_def, n, name),
        ColumnReader::FloatColumnReader(r) => none(r, max_def, n, name),
        ColumnReader::DoubleColumnReader(r) => none(r, max_def, n, name),
        ColumnReader::ByteArrayColumnReader(r) => none(r, max_def, n, name),
        ColumnReader::FixedLenByteArrayColumnReader(r) => none(r, max_def, n, name),
    }
}

/// Up to `n` byte strings of column `name`, `None` where null, each copied out of `budget`
/// bytes (a dictionary's value is copied for every row that names it).
fn bytes(
    (reader, max_def): Column,
    n: usize,
    name: &str,
    budget: &mut u64,
) -> Result<Vec<Option<Bytes>>, String> {
    let shown = |e: parquet::errors::ParquetError| format!("column {name:?}: {e}");
    let mut take = |data: &[u8]| -> Result<Bytes, String> {
        *budget = budget
            .checked_sub(data.len() as u64)
            .ok_or_else(|| format!("its values make more than {MOST_DECOMPRESSED} bytes"))?;
        Ok(Bytes::copy_from_slice(data))
    };
    match reader {
        ColumnReader::ByteArrayColumnReader(r) => values(r, max_def, n)
            .map_err(shown)?
            .into_iter()
            .map(|v| v.map(|b| take(b.data())).transpose())
            .collect(),
        ColumnReader::FixedLenByteArrayColumnReader(r) => values(r, max_def, n)
            .map_err(shown)?
            .into_iter()
            .map(|v| v.map(|b| take(b.data())).transpose())
            .collect(),
        other => Ok(vec![None; nulls((other, max_def), n, name)?]),
    }
}

/// Up to `n` texts of column `name`, `None` where null, copied out of `budget` bytes.
fn texts(
    column: Column,
    n: usize,
    name: &str,
    budget: &mut u64,
) -> Result<Vec<Option<String>>, String> {
    bytes(column, n, name, budget)?
        .into_iter()
        .map(|v| {
            v.map(|b| {
                String::from_utf8(b.into())
                    .map_err(|_| format!("its column {name:?} holds bytes that are not UTF-8"))
            })
            .transpose()
        })
        .collect()
}

/// Up to `n` whole numbers of column `name`, 0 where null.
fn whole_numbers((reader, max_def): Column, n: usize, name: &str) -> Result<Vec<i64>, String> {
    let shown = |e: parquet::errors::ParquetError| format!("column {name:?}: {e}");
    match reader {
        ColumnReader::Int64ColumnReader(r) => Ok(values(r, max_def, n)
            .map_err(shown)?
            .into_iter()
            .map(|v| v.unwrap_or(0))
            .collect()),
        ColumnReader::Int32ColumnReader(r) => Ok(values(r, max_def, n)
            .map_err(shown)?
            .into_iter()
            .map(|v| i64::from(v.unwrap_or(0)))
            .collect()),
        other => Ok(vec![0; nulls((other, max_def), n, name)?]),
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use parquet::basic::Compression;
    use parquet::data_type::{ByteArray, ByteArrayType, Int32Type, Int64Type};
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::SerializedFileWriter;
    use parquet::schema::parser::parse_message_type;
    use std::sync::Arc;

    /// A column's values: text or bytes (`None`: null), or whole numbers.
    pub enum Values<'a> {
        Bytes(&'a [Option<&'a [u8]>]),
        Int64(&'a [Option<i64>]),
        Int32(&'a [Option<i32>]),
    }

    /// A Parquet file of `schema` whose row groups hold `groups`' columns, in order.
    pub fn parquet(schema: &str, groups: &[&[Values<'_>]]) -> Bytes {
        compressed(schema, groups, Compression::UNCOMPRESSED)
    }

    /// [`parquet`], its pages compressed with `compression`.
    fn compressed(schema: &str, groups: &[&[Values<'_>]], compression: Compression) -> Bytes {
        let schema = Arc::new(parse_message_type(schema).unwrap());
        let props = Arc::new(
            WriterProperties::builder()
                .set_compression(compression)
                .build(),
        );
        let mut writer = SerializedFileWriter::new(Vec::new(), schema, props).unwrap();
        for columns in groups {
            let mut group = writer.next_row_group().unwrap();
            for values in *columns {
                let mut column = group.next_column().unwrap().unwrap();
                let (max_def, max_rep) = levels(&mut column);
                // One value per row: a list's rows are lists of one.
                let defs = |present: Vec<bool>| -> Option<Vec<i16>> {
                    (max_def > 0).then(|| {
                        present
                            .iter()
                            .map(|p| if *p { max_def } else { 0 })
                            .collect()
                    })
                };
                let reps = |n: usize| (max_rep > 0).then(|| vec![0i16; n]);
                match values {
                    Values::Bytes(v) => {
                        let d = defs(v.iter().map(Option::is_some).collect());
                        let data: Vec<ByteArray> = v
                            .iter()
                            .flatten()
                            .map(|b| ByteArray::from(b.to_vec()))
                            .collect();
                        column
                            .typed::<ByteArrayType>()
                            .write_batch(&data, d.as_deref(), reps(v.len()).as_deref())
                            .unwrap();
                    }
                    Values::Int64(v) => {
                        let d = defs(v.iter().map(Option::is_some).collect());
                        let data: Vec<i64> = v.iter().flatten().copied().collect();
                        column
                            .typed::<Int64Type>()
                            .write_batch(&data, d.as_deref(), reps(v.len()).as_deref())
                            .unwrap();
                    }
                    Values::Int32(v) => {
                        let d = defs(v.iter().map(Option::is_some).collect());
                        let data: Vec<i32> = v.iter().flatten().copied().collect();
                        column
                            .typed::<Int32Type>()
                            .write_batch(&data, d.as_deref(), reps(v.len()).as_deref())
                            .unwrap();
                    }
                }
                column.close().unwrap();
            }
            group.close().unwrap();
        }
        Bytes::from(writer.into_inner().unwrap())
    }

    /// The column's largest definition and repetition levels.
    fn levels(column: &mut parquet::file::writer::SerializedColumnWriter<'_>) -> (i16, i16) {
        use parquet::column::writer::ColumnWriter;
        let descr = match column.untyped() {
            ColumnWriter::ByteArrayColumnWriter(w) => w.get_descriptor().clone(),
            ColumnWriter::Int64ColumnWriter(w) => w.get_descriptor().clone(),
            ColumnWriter::Int32ColumnWriter(w) => w.get_descriptor().clone(),
            _ => unreachable!("the tests write no other type"),
        };
        (descr.max_def_level(), descr.max_rep_level())
    }

    /// fastparquet's schema for kerchunk's records.
    pub const FASTPARQUET: &str = "message schema {
        optional binary path (UTF8); required int64 offset; required int64 size;
        optional binary raw; }";

    #[test]
    fn rows_are_read_as_fsspec_reads_them() {
        let file = parquet(
            FASTPARQUET,
            &[&[
                Values::Bytes(&[
                    Some(b"s3://b/f.nc"),
                    Some(b"s3://b/g.nc"),
                    Some(b"s3://b/f.nc"),
                    None,
                    Some(b"ignored.nc"),
                ]),
                Values::Int64(&[Some(100), Some(0), Some(7), Some(0), Some(1)]),
                Values::Int64(&[Some(20), Some(0), Some(0), Some(0), Some(1)]),
                Values::Bytes(&[None, None, None, None, Some(b"\x00\x01")]),
            ]],
        );
        let got = decode(file, 100, 100).unwrap();
        assert_eq!(got.urls, ["s3://b/f.nc", "s3://b/g.nc"]);
        assert_eq!(
            got.rows,
            [
                Row::Range {
                    url: 0,
                    offset: 100,
                    len: 20
                },
                Row::Whole { url: 1 },
                Row::Range {
                    url: 0,
                    offset: 7,
                    len: 0
                },
                Row::Missing,
                Row::Inline(Bytes::from_static(b"\x00\x01")),
            ]
        );
    }

    #[test]
    fn records_are_read_however_they_are_compressed() {
        let columns = [
            Values::Bytes(&[Some(b"f.nc"), Some(b"f.nc")]),
            Values::Int64(&[Some(8), Some(16)]),
            Values::Int64(&[Some(8), Some(8)]),
            Values::Bytes(&[None, None]),
        ];
        // kerchunk writes zstd; pyarrow's default is snappy.
        for compression in [
            Compression::ZSTD(Default::default()),
            Compression::SNAPPY,
            Compression::LZ4_RAW,
            Compression::UNCOMPRESSED,
        ] {
            let file = compressed(FASTPARQUET, &[&columns], compression);
            assert_eq!(
                decode(file, 10, 100).map(|d| d.rows.len()),
                Ok(2),
                "{compression:?}"
            );
        }
        // Hadoop's LZ4 framing decodes as much as the data makes, whatever a page declares.
        let lz4 = compressed(FASTPARQUET, &[&columns], Compression::LZ4);
        let got = decode(lz4, 10, 100);
        assert!(
            matches!(&got, Err(why) if why.contains("compressed with LZ4, which is not read")),
            "{got:?}"
        );
    }

    #[test]
    fn columns_of_nulls_only_or_left_out_are_nothing() {
        // pyarrow types a column of nothing but nulls as null (INT32 in the file).
        let file = parquet(
            "message schema { optional int32 path; optional int64 offset; optional int64 size;
                optional binary raw; }",
            &[&[
                Values::Int32(&[None, None, None]),
                Values::Int64(&[Some(0), None, Some(0)]),
                Values::Int64(&[Some(0), None, Some(0)]),
                Values::Bytes(&[Some(b"abc"), None, Some(b"")]),
            ]],
        );
        let got = decode(file, 100, 100).unwrap();
        assert_eq!(
            got.rows,
            [
                Row::Inline(Bytes::from_static(b"abc")),
                Row::Missing,
                Row::Inline(Bytes::new())
            ]
        );
        let only_paths = parquet(
            "message schema { optional binary path (UTF8); }",
            &[&[Values::Bytes(&[Some(b"a.nc"), None])]],
        );
        assert_eq!(
            decode(only_paths, 100, 100).unwrap().rows,
            [Row::Whole { url: 0 }, Row::Missing]
        );
    }

    #[test]
    fn row_groups_follow_each_other_up_to_the_record_size() {
        let group = |first: i64| {
            [
                Values::Bytes(&[Some(b"f"), Some(b"f")]),
                Values::Int64(if first == 0 {
                    &[Some(0), Some(1)]
                } else {
                    &[Some(2), Some(3)]
                }),
                Values::Int64(&[Some(1), Some(1)]),
                Values::Bytes(&[None, None]),
            ]
        };
        let (a, b) = (group(0), group(2));
        let file = parquet(FASTPARQUET, &[&a, &b]);
        let offsets = |rows: Vec<Row>| -> Vec<u64> {
            rows.into_iter()
                .map(|r| match r {
                    Row::Range { offset, .. } => offset,
                    other => panic!("{other:?}"),
                })
                .collect()
        };
        assert_eq!(
            offsets(decode(file.clone(), 100, 100).unwrap().rows),
            [0, 1, 2, 3]
        );
        assert_eq!(offsets(decode(file, 3, 100).unwrap().rows), [0, 1, 2]);
    }

    #[test]
    fn dictionaries_larger_than_a_record_are_refused_before_they_are_decoded() {
        let names: Vec<Vec<u8>> = (0..50).map(|i| format!("f{i}.nc").into_bytes()).collect();
        let paths: Vec<Option<&[u8]>> = names.iter().map(|n| Some(n.as_slice())).collect();
        let zeros = vec![Some(0); 50];
        let raws = vec![None; 50];
        let file = parquet(
            FASTPARQUET,
            &[&[
                Values::Bytes(&paths),
                Values::Int64(&zeros),
                Values::Int64(&zeros),
                Values::Bytes(&raws),
            ]],
        );
        assert_eq!(decode(file.clone(), 10, 50).map(|d| d.urls.len()), Ok(10));
        let got = decode(file, 10, 10);
        assert!(
            matches!(&got, Err(why) if why.contains("dictionary page declares 50 values")),
            "{got:?}"
        );
    }

    #[test]
    fn a_dictionary_value_named_by_every_row_is_copied_within_a_bound() {
        // 600 rows naming one path of 512 KiB: the file holds it once, the rows 300 MiB.
        let schema =
            Arc::new(parse_message_type("message schema { required binary path; }").unwrap());
        let props = Arc::new(WriterProperties::builder().build());
        let mut writer = SerializedFileWriter::new(Vec::new(), schema, props).unwrap();
        let mut group = writer.next_row_group().unwrap();
        let mut column = group.next_column().unwrap().unwrap();
        let long = Bytes::from(vec![b'a'; 512 << 10]);
        let rows: Vec<ByteArray> = (0..600).map(|_| ByteArray::from(long.clone())).collect();
        column
            .typed::<ByteArrayType>()
            .write_batch(&rows, None, None)
            .unwrap();
        column.close().unwrap();
        group.close().unwrap();
        let file = Bytes::from(writer.into_inner().unwrap());
        assert!(
            file.len() < 2 << 20,
            "dictionary-encoded: {} bytes",
            file.len()
        );
        let got = decode(file, 600, 600);
        assert!(
            matches!(&got, Err(why) if why.contains("values make more than")),
            "{:?}",
            got.map(|d| d.rows.len())
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(400))]
        /// A record damaged anywhere is read or refused: never a crash, never an allocation
        /// its pages' bounds do not allow.
        #[test]
        fn damaged_records_are_read_or_refused(
            damage in proptest::collection::vec((0usize..4096, proptest::prelude::any::<u8>()), 1..6)
        ) {
            let names: Vec<Vec<u8>> =
                (0..40).map(|i| format!("s3://b/f{}.nc", i % 7).into_bytes()).collect();
            let paths: Vec<Option<&[u8]>> = names
                .iter()
                .enumerate()
                .map(|(i, n)| (i % 5 != 0).then_some(n.as_slice()))
                .collect();
            let offsets: Vec<Option<i64>> = (0..40).map(|i| Some(i * 100)).collect();
            let sizes = vec![Some(100); 40];
            let raws: Vec<Option<&[u8]>> = (0..40).map(|i| (i % 5 == 0).then_some(&b"xy"[..])).collect();
            for compression in [Compression::ZSTD(Default::default()), Compression::SNAPPY] {
                let file = compressed(
                    FASTPARQUET,
                    &[&[
                        Values::Bytes(&paths),
                        Values::Int64(&offsets),
                        Values::Int64(&sizes),
                        Values::Bytes(&raws),
                    ]],
                    compression,
                );
                let mut bytes = file.to_vec();
                for (at, value) in &damage {
                    let at = at % bytes.len();
                    bytes[at] = *value;
                }
                if let Ok(decoded) = decode_record(Bytes::from(bytes), 40, 40) {
                    proptest::prop_assert!(decoded.rows.len() <= 40);
                }
            }
        }
    }

    #[test]
    fn records_that_cannot_be_read_are_refused_with_the_reason() {
        let wrong_type = parquet(
            "message schema { optional int64 path; }",
            &[&[Values::Int64(&[None, Some(3)])]],
        );
        let negative = parquet(
            FASTPARQUET,
            &[&[
                Values::Bytes(&[Some(b"f")]),
                Values::Int64(&[Some(-1)]),
                Values::Int64(&[Some(4)]),
                Values::Bytes(&[None]),
            ]],
        );
        let not_utf8 = parquet(
            "message schema { optional binary path; }",
            &[&[Values::Bytes(&[Some(b"\xff")])]],
        );
        let lists = parquet(
            "message schema { repeated binary path; }",
            &[&[Values::Bytes(&[Some(b"f")])]],
        );
        let good = parquet(FASTPARQUET, &[]);
        for (file, says) in [
            (wrong_type, "values of the wrong type"),
            (negative, "name no bytes"),
            (not_utf8, "not UTF-8"),
            (lists, "holds lists"),
            (
                Bytes::from_static(b"PAR1 not really PAR1"),
                "not a readable Parquet file",
            ),
            (good.slice(..good.len() - 3), "not a readable Parquet file"),
        ] {
            let got = decode(file, 100, 100);
            assert!(
                matches!(&got, Err(why) if why.contains(says)),
                "{says}: {got:?}"
            );
        }
    }
}
