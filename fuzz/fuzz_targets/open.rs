//! Coverage-guided fuzzing of opening and reading a dataset whose objects the fuzzer writes
//! (see `../session.rs` for the input format and what is exercised).

#![no_main]

#[path = "../session.rs"]
mod session;

libfuzzer_sys::fuzz_target!(|input: &[u8]| session::run(input));
