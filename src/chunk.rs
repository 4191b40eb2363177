//! The chunk engine's storage-free core: projecting a hyperslab (`start`/`count`/`stride`, and
//! `imap` for the memory side) onto the chunk grid, and copying elements between decoded chunk
//! buffers and user memory.
//!
//! Owns the arithmetic of chunked access and nothing else: it must not know about stores, keys,
//! JSON, codecs or C. Callers hand it shapes and byte buffers and get back pieces and copies.

pub mod cache;
pub mod copy;
pub mod projection;
pub mod runs;
pub mod transpose;
