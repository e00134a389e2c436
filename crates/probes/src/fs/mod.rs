//! Files and folders that others may control, read and held safely:
//! bounded reads, private folders, locks, metadata and message folders.

pub mod file;
pub mod folder;
pub mod inbox;
pub mod lock;
pub mod meta;
