//! Files and folders that others may control, read and held safely:
//! bounded reads, private folders, locks, metadata, pid files and message
//! folders.

pub mod file;
pub mod folder;
pub mod inbox;
pub mod lock;
pub mod meta;
pub mod pid_file;
pub mod pid_files;
