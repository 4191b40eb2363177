//! Coverage-guided fuzzing of writing to a dataset whose objects the fuzzer writes, then
//! reading it back (see `run_write` in `../session.rs`).

#![no_main]

#[path = "../session.rs"]
mod session;

libfuzzer_sys::fuzz_target!(|input: &[u8]| session::run_write(input));
