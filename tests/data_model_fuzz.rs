//! Random sessions on one variable through the dataset API against a dense model of its
//! values: random shapes and chunk shapes, an unlimited first dimension or none, float or short
//! stored little- or big-endian, the default fill value, another or none, every codec family,
//! directory, zip and S3 stores, in Zarr v2 and v3, chunk caches from none to the default; strided writes and
//! reads converted from and to float and double, reads into Fortran-order memory,
//! chunk-by-chunk sweeps (the read-ahead path), point series through every chunk, renames,
//! syncs and reopenings. Every read must equal the model: whichever fast path serves a request,
//! a wrong value anywhere fails the case.

mod common;

use common::s3::{BUCKET, Kind, Server};
use nczarr_rs::api::{CreateOptions, Dataset, Slab};
use nczarr_rs::model::{Endian, GroupId, NcType, Storage, Tree, Values};
use nczarr_rs::url::DatasetUrl;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use std::sync::OnceLock;

const G: GroupId = Tree::ROOT;

#[derive(Debug, Clone, Copy)]
enum Coding {
    Raw,
    ShuffleDeflate,
    Zstd,
    BloscLz4Shuffle,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Place {
    Directory,
    Zip,
    S3,
}

/// What unwritten elements hold.
#[derive(Debug, Clone, Copy)]
enum Fill {
    Default,
    Custom,
    /// `NC_NOFILL`: unwritten elements are unspecified (and not checked).
    None,
}

#[derive(Debug, Clone, Copy)]
enum Cache {
    Default,
    None,
    OneChunk,
}

/// A variable and where it lives.
#[derive(Debug, Clone)]
struct Layout {
    /// Lengths of the dimensions; with `unlimited`, the first is the most a session writes
    /// along it.
    shape: Vec<u64>,
    chunks: Vec<u64>,
    unlimited: bool,
    short: bool,
    big_endian: bool,
    coding: Coding,
    place: Place,
    cache: Cache,
    fill: Fill,
    /// Stored in Zarr v3 (`mode=nczarr,v3`).
    v3: bool,
}

/// Where a request falls, as fractions turned into places once the current shape is known.
type Picks = Vec<(u16, u16, u16)>;

#[derive(Debug, Clone)]
enum Step {
    Put {
        picks: Picks,
        seed: u8,
        double: bool,
    },
    Get {
        picks: Picks,
        double: bool,
        fortran: bool,
    },
    Sweep,
    Series(u16),
    /// Writes one record of a second variable sharing the dimensions: with an unlimited
    /// dimension, the variable grows too, its new records unwritten.
    Extend(u16),
    /// Renames the variable (its chunks move with it), back and forth between two names.
    Rename,
    Sync,
    Reopen,
}

/// A variable of the shape and chunk shape `shapes` gives, with everything else about it
/// random: type, byte order, codec, store (directory or zip), cache and fill.
fn a_layout_of(
    shapes: impl Strategy<Value = (Vec<u64>, Vec<u64>)>,
) -> impl Strategy<Value = Layout> {
    (
        shapes,
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        prop_oneof![
            Just(Coding::Raw),
            Just(Coding::ShuffleDeflate),
            Just(Coding::Zstd),
            Just(Coding::BloscLz4Shuffle)
        ],
        any::<bool>(),
        prop_oneof![
            Just(Cache::Default),
            Just(Cache::None),
            Just(Cache::OneChunk)
        ],
        a_fill(),
        any::<bool>(),
    )
        .prop_map(
            |((shape, chunks), unlimited, short, big_endian, coding, zip, cache, fill, v3)| {
                Layout {
                    shape,
                    chunks,
                    unlimited,
                    short,
                    big_endian,
                    coding,
                    place: if zip { Place::Zip } else { Place::Directory },
                    cache,
                    fill,
                    v3,
                }
            },
        )
}

/// Small variables of one to three dimensions.
fn a_layout() -> impl Strategy<Value = Layout> {
    a_layout_of((1usize..=3).prop_flat_map(|rank| {
        prop::collection::vec((1u64..=9, 1u64..=9), rank).prop_map(|dims| {
            let shape = dims.iter().map(|&(n, _)| n).collect();
            let chunks = dims.iter().map(|&(n, c)| c.min(n)).collect();
            (shape, chunks)
        })
    }))
}

/// Variables of up to 3 M elements whose chunks reach the sizes where the engine changes
/// course: chunks shared among the workers (a few MiB), chunks read ahead in a sweep, partly
/// decoded chunks, batches of many chunks.
fn a_large_layout() -> impl Strategy<Value = Layout> {
    a_layout_of(
        (
            (1u64..=24, 16u64..=256, 64u64..=512),
            (0u64..=3, 0u64..=3, 0u64..=3),
        )
            .prop_map(|((t, y, x), (ct, cy, cx))| {
                // Each chunk dimension: the whole length, or a half, a fifth or a ninth of it.
                let part = |n: u64, k: u64| n.div_ceil([1, 2, 5, 9][k as usize]);
                (vec![t, y, x], vec![part(t, ct), part(y, cy), part(x, cx)])
            }),
    )
}

fn some_picks() -> impl Strategy<Value = Picks> {
    prop::collection::vec((any::<u16>(), any::<u16>(), any::<u16>()), 3)
}

fn a_step() -> impl Strategy<Value = Step> {
    prop_oneof![
        5 => (some_picks(), any::<u8>(), any::<bool>())
            .prop_map(|(picks, seed, double)| Step::Put { picks, seed, double }),
        5 => (some_picks(), any::<bool>(), any::<bool>())
            .prop_map(|(picks, double, fortran)| Step::Get { picks, double, fortran }),
        1 => Just(Step::Sweep),
        1 => any::<u16>().prop_map(Step::Series),
        1 => any::<u16>().prop_map(Step::Extend),
        1 => Just(Step::Rename),
        1 => Just(Step::Sync),
        1 => Just(Step::Reopen),
    ]
}

/// The dense model: values in C order over `capacity`, and the current length of each
/// dimension.
struct Model {
    capacity: Vec<u64>,
    len: Vec<u64>,
    values: Vec<f64>,
}

impl Model {
    fn new(layout: &Layout, fill: f64) -> Model {
        let capacity = layout.shape.clone();
        let mut len = layout.shape.clone();
        if layout.unlimited {
            len[0] = 0;
        }
        let n: u64 = capacity.iter().product();
        Model {
            capacity,
            len,
            values: vec![fill; n as usize],
        }
    }

    fn offset(&self, index: &[u64]) -> usize {
        index
            .iter()
            .zip(&self.capacity)
            .fold(0u64, |acc, (&i, &n)| acc * n + i) as usize
    }
}

/// Each element index of `slab`, in C order over its count, handed to `each` with its
/// position in that order.
fn each_index(slab: &Slab, mut each: impl FnMut(usize, &[u64])) {
    let rank = slab.count.len();
    if slab.count.contains(&0) {
        return;
    }
    let mut idx = slab.start.clone();
    let mut step = vec![0u64; rank];
    let mut k = 0usize;
    loop {
        each(k, &idx);
        k += 1;
        let mut d = rank;
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            step[d] += 1;
            if step[d] < slab.count[d] {
                idx[d] += slab.stride[d];
                break;
            }
            step[d] = 0;
            idx[d] = slab.start[d];
        }
    }
}

/// A request inside `reach` (for writes, the model's capacity, so that they may grow an
/// unlimited dimension); `None` when the variable is empty along a dimension.
fn slab_from(picks: &Picks, reach: &[u64]) -> Option<Slab> {
    let mut slab = Slab {
        start: vec![],
        count: vec![],
        stride: vec![],
    };
    for (d, &(a, b, c)) in picks.iter().take(reach.len()).enumerate() {
        let limit = reach[d];
        if limit == 0 {
            return None;
        }
        let start = u64::from(a) % limit;
        let stride = 1 + u64::from(c) % 3;
        let most = (limit - start).div_ceil(stride);
        let count = 1 + u64::from(b) % most;
        slab.start.push(start);
        slab.count.push(count);
        slab.stride.push(stride);
    }
    Some(slab)
}

/// The one S3 server of this test binary (moto: its buckets are public, so the URL alone
/// reaches it, unsigned).
fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| Server::start(Kind::Moto))
}

/// Where a session's dataset lives: a temporary directory, which the directory and zip stores
/// use and which an S3 session keeps for nothing but its unique root.
struct Location {
    dir: tempfile::TempDir,
    s3_root: Option<String>,
}

impl Location {
    fn new(layout: &Layout) -> Location {
        Location {
            dir: tempfile::tempdir().unwrap(),
            s3_root: (layout.place == Place::S3).then(|| server().fresh_root("fuzz")),
        }
    }

    fn url(&self, layout: &Layout) -> DatasetUrl {
        let dir = self.dir.path();
        let format = if layout.v3 { "nczarr,v3" } else { "nczarr" };
        let text = match (layout.place, &self.s3_root) {
            (Place::Zip, _) => format!("file://{}#mode={format},zip", dir.join("d.zip").display()),
            (Place::S3, Some(root)) => format!(
                "s3://{BUCKET}/{root}#mode={format},s3&aws.profile=none&aws.endpoint={}",
                server().endpoint()
            ),
            _ => format!("file://{}#mode={format},file", dir.join("d.zarr").display()),
        };
        DatasetUrl::parse(&text).unwrap()
    }
}

fn var_type(layout: &Layout) -> NcType {
    if layout.short {
        NcType::Short
    } else {
        NcType::Float
    }
}

fn a_fill() -> impl Strategy<Value = Fill> {
    prop_oneof![
        2 => Just(Fill::Default),
        1 => Just(Fill::Custom),
        1 => Just(Fill::None)
    ]
}

/// What the model holds for an element `NC_NOFILL` leaves unspecified.
const UNSPECIFIED: f64 = f64::from_bits(0x7ff8_dead_beef_0001);

/// The custom fill value of each type.
const CUSTOM_FILL: (i16, f32) = (-7, 17.5);

/// What an unwritten element reads as.
fn fill(layout: &Layout) -> f64 {
    match (layout.fill, layout.short) {
        (Fill::Default, true) => -32767.0,
        (Fill::Default, false) => f64::from(9.969_21e36_f32),
        (Fill::Custom, true) => f64::from(CUSTOM_FILL.0),
        (Fill::Custom, false) => f64::from(CUSTOM_FILL.1),
        (Fill::None, _) => UNSPECIFIED,
    }
}

fn create(at: &Location, layout: &Layout) -> Dataset {
    let mut ds = Dataset::create(&at.url(layout), CreateOptions::default()).unwrap();
    let dims: Vec<i32> = layout
        .shape
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            let unlimited = layout.unlimited && i == 0;
            let len = if unlimited { 0 } else { n };
            ds.def_dim(G, &format!("d{i}"), len, unlimited).unwrap().0 as i32
        })
        .collect();
    let v = ds.def_var(G, "v", var_type(layout), &dims).unwrap();
    ds.def_var_chunking(G, v, Storage::Chunked, Some(&layout.chunks))
        .unwrap();
    let endian = if layout.big_endian {
        Endian::Big
    } else {
        Endian::Little
    };
    ds.def_var_endian(G, v, Some(endian)).unwrap();
    match layout.fill {
        Fill::Default => {}
        Fill::Custom => {
            let bytes = if layout.short {
                CUSTOM_FILL.0.to_ne_bytes().to_vec()
            } else {
                CUSTOM_FILL.1.to_ne_bytes().to_vec()
            };
            let ty = var_type(layout);
            ds.def_var_fill(G, v, false, Some(Values::Fixed { ty, bytes }))
                .unwrap();
        }
        Fill::None => ds.def_var_fill(G, v, true, None).unwrap(),
    }
    match layout.coding {
        Coding::Raw => {}
        Coding::ShuffleDeflate => ds.def_var_deflate(G, v, true, true, 1).unwrap(),
        Coding::Zstd => ds.def_var_filter(G, v, 32015, &[1]).unwrap(),
        Coding::BloscLz4Shuffle => ds
            .def_var_filter(G, v, 32001, &[0, 0, 0, 0, 5, 1, 1])
            .unwrap(),
    }
    ds.def_var(G, "w", NcType::Int, &dims).unwrap();
    ds.enddef().unwrap();
    set_cache(&mut ds, layout);
    ds
}

fn set_cache(ds: &mut Dataset, layout: &Layout) {
    let esize = if layout.short { 2 } else { 4 };
    let chunk: u64 = layout.chunks.iter().product::<u64>() * esize;
    match layout.cache {
        Cache::Default => {}
        Cache::None => ds.set_var_chunk_cache(G, 0, 0, 0, 0.75).unwrap(),
        Cache::OneChunk => ds
            .set_var_chunk_cache(G, 0, chunk as usize, 1, 0.75)
            .unwrap(),
    }
}

fn encode(values: &[f64], double: bool) -> Vec<u8> {
    if double {
        values.iter().flat_map(|v| v.to_ne_bytes()).collect()
    } else {
        values
            .iter()
            .flat_map(|&v| (v as f32).to_ne_bytes())
            .collect()
    }
}

fn decode(bytes: &[u8], double: bool) -> Vec<f64> {
    if double {
        bytes
            .chunks_exact(8)
            .map(|b| f64::from_ne_bytes(b.try_into().unwrap()))
            .collect()
    } else {
        bytes
            .chunks_exact(4)
            .map(|b| f64::from(f32::from_ne_bytes(b.try_into().unwrap())))
            .collect()
    }
}

/// Reads `slab` (into Fortran-order memory when asked) and compares it with the model.
fn check_read(
    ds: &mut Dataset,
    model: &Model,
    slab: &Slab,
    double: bool,
    fortran: bool,
    what: &str,
) -> Result<(), TestCaseError> {
    let n: u64 = slab.count.iter().product();
    let size = if double { 8 } else { 4 };
    let mut out = vec![0xA5u8; n as usize * size];
    let rank = slab.count.len();
    let strides: Vec<i64> = (0..rank)
        .map(|d| slab.count[..d].iter().product::<u64>() as i64)
        .collect();
    let memtype = if double {
        NcType::Double
    } else {
        NcType::Float
    };
    ds.get_fixed(
        G,
        0,
        slab,
        fortran.then_some(&strides[..]),
        memtype,
        &mut out,
    )
    .map_err(|e| TestCaseError::fail(format!("{what} {slab:?}: {e}")))?;
    let got = decode(&out, double);
    let mut wrong = None;
    each_index(slab, |k, index| {
        if wrong.is_some() {
            return;
        }
        let place = if fortran {
            let mut rest = k as u64;
            let mut at = 0i64;
            for d in (0..rank).rev() {
                at += (rest % slab.count[d]) as i64 * strides[d];
                rest /= slab.count[d];
            }
            at as usize
        } else {
            k
        };
        let want = model.values[model.offset(index)];
        let unspecified = want.to_bits() == UNSPECIFIED.to_bits();
        if !unspecified && got[place].to_bits() != want.to_bits() && got[place] != want {
            wrong = Some(format!(
                "{what} {slab:?}: {} at {index:?}, want {want}",
                got[place]
            ));
        }
    });
    wrong.map_or(Ok(()), |e| Err(TestCaseError::fail(e)))
}

/// Does a reading step (others are no-ops) and compares what it reads with the model.
fn read_step(
    ds: &mut Dataset,
    model: &Model,
    layout: &Layout,
    step: &Step,
) -> Result<(), TestCaseError> {
    match step {
        Step::Get {
            picks,
            double,
            fortran,
        } => {
            let Some(slab) = slab_from(picks, &model.len) else {
                return Ok(());
            };
            check_read(ds, model, &slab, *double, *fortran, "get")?;
        }
        Step::Sweep => {
            if model.len.contains(&0) {
                return Ok(());
            }
            let grid: Vec<u64> = model
                .len
                .iter()
                .zip(&layout.chunks)
                .map(|(&n, &c)| n.div_ceil(c))
                .collect();
            let total: u64 = grid.iter().product();
            for flat in 0..total {
                let mut rest = flat;
                let mut slab = Slab {
                    start: vec![0; grid.len()],
                    count: vec![0; grid.len()],
                    stride: vec![1; grid.len()],
                };
                for d in (0..grid.len()).rev() {
                    let c = rest % grid[d];
                    rest /= grid[d];
                    slab.start[d] = c * layout.chunks[d];
                    slab.count[d] = layout.chunks[d].min(model.len[d] - slab.start[d]);
                }
                check_read(ds, model, &slab, false, false, "sweep")?;
            }
        }
        Step::Series(at) => {
            if model.len.contains(&0) {
                return Ok(());
            }
            let rank = model.len.len();
            let point: Vec<u64> = (0..rank)
                .map(|d| u64::from(*at).wrapping_mul(d as u64 + 7) % model.len[d])
                .collect();
            for t in 0..model.len[0] {
                let mut start = point.clone();
                start[0] = t;
                let slab = Slab {
                    start,
                    count: vec![1; rank],
                    stride: vec![1; rank],
                };
                check_read(ds, model, &slab, false, false, "series")?;
            }
        }
        Step::Put { .. } | Step::Extend(_) | Step::Rename | Step::Sync | Step::Reopen => {}
    }
    Ok(())
}

fn run(layout: &Layout, steps: &[Step]) -> Result<(), TestCaseError> {
    let at = Location::new(layout);
    let mut ds = create(&at, layout);
    let mut model = Model::new(layout, fill(layout));
    let ty = var_type(layout);
    let mut renamed = false;
    for step in steps {
        match step {
            Step::Put {
                picks,
                seed,
                double,
            } => {
                let Some(slab) = slab_from(picks, &model.capacity) else {
                    continue;
                };
                let n: u64 = slab.count.iter().product();
                let values: Vec<f64> = (0..n)
                    .map(|i| f64::from(*seed % 100) * 100.0 + (i % 20_000) as f64)
                    .collect();
                let memtype = if *double {
                    NcType::Double
                } else {
                    NcType::Float
                };
                let range = ds
                    .put_fixed(G, 0, &slab, None, memtype, &encode(&values, *double))
                    .map_err(|e| TestCaseError::fail(format!("put {slab:?}: {e}")))?;
                prop_assert!(!range, "values out of range for {:?}", ty);
                each_index(&slab, |k, index| {
                    let at = model.offset(index);
                    model.values[at] = values[k];
                });
                for d in 0..slab.start.len() {
                    let last = slab.start[d] + (slab.count[d] - 1) * slab.stride[d];
                    model.len[d] = model.len[d].max(last + 1);
                }
            }
            Step::Get { .. } | Step::Sweep | Step::Series(_) => {
                read_step(&mut ds, &model, layout, step)?;
            }
            Step::Extend(at) => {
                let rank = model.capacity.len();
                let mut start = vec![0; rank];
                start[0] = u64::from(*at) % model.capacity[0];
                let one = Slab {
                    start,
                    count: vec![1; rank],
                    stride: vec![1; rank],
                };
                ds.put_fixed(G, 1, &one, None, NcType::Int, &7i32.to_ne_bytes())
                    .map_err(|e| TestCaseError::fail(format!("extend {one:?}: {e}")))?;
                model.len[0] = model.len[0].max(one.start[0] + 1);
            }
            Step::Rename => {
                // Both names sort before the second variable's, whose index stays 1.
                renamed = !renamed;
                let to = if renamed { "a" } else { "v" };
                ds.rename_var(G, 0, to)
                    .map_err(|e| TestCaseError::fail(format!("rename to {to}: {e}")))?;
            }
            Step::Sync => ds
                .sync()
                .map_err(|e| TestCaseError::fail(format!("sync: {e}")))?,
            Step::Reopen => {
                ds.close()
                    .map_err(|e| TestCaseError::fail(format!("close: {e}")))?;
                ds = Dataset::open(&at.url(layout), true).unwrap();
                set_cache(&mut ds, layout);
            }
        }
    }
    ds.close()
        .map_err(|e| TestCaseError::fail(format!("close: {e}")))?;
    // What was stored, read back whole by a fresh reader, then by the session's reading steps
    // again, read-only (where chunks of a sweep are decoded ahead).
    let mut ds = Dataset::open(&at.url(layout), false).unwrap();
    set_cache(&mut ds, layout);
    if !model.len.contains(&0) {
        let rank = model.len.len();
        let all = Slab {
            start: vec![0; rank],
            count: model.len.clone(),
            stride: vec![1; rank],
        };
        check_read(&mut ds, &model, &all, true, false, "stored")?;
    }
    for step in steps {
        read_step(&mut ds, &model, layout, step)?;
    }
    ds.close().unwrap();
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(160))]

    #[test]
    fn random_sessions_read_what_the_model_holds(
        layout in a_layout(),
        steps in prop::collection::vec(a_step(), 1..24),
    ) {
        run(&layout, &steps)?;
    }

    #[test]
    fn random_sessions_on_s3_read_what_the_model_holds(
        layout in a_layout(),
        steps in prop::collection::vec(a_step(), 1..24),
    ) {
        run(&Layout { place: Place::S3, ..layout }, &steps)?;
    }

    #[test]
    fn random_sessions_on_large_variables_read_what_the_model_holds(
        layout in a_large_layout(),
        steps in prop::collection::vec(a_step(), 1..10),
    ) {
        run(&layout, &steps)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    #[test]
    fn random_sessions_on_large_variables_on_s3_read_what_the_model_holds(
        layout in a_large_layout(),
        steps in prop::collection::vec(a_step(), 1..10),
    ) {
        run(&Layout { place: Place::S3, ..layout }, &steps)?;
    }
}
