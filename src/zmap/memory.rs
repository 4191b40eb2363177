//! In-memory store (tests and diskless datasets).
