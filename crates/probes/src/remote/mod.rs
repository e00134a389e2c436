//! Remote hosts by ssh alias (over [`crate::ssh`]): the host's long-lived
//! shell session, and its panes' processes read remotely.

pub mod host;
pub mod procs;
