//! The analyses: kernel table (and later overlap, fuse, similarity).
