//! Coverage-guided fuzzing of zip archives: the input is written to a file, opened as a zip
//! store and read as `../session.rs` reads every dataset.

#![no_main]

#[path = "../session.rs"]
mod session;

libfuzzer_sys::fuzz_target!(|input: &[u8]| session::run_zip(input));
