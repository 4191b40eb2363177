//! Directory-tree store.
