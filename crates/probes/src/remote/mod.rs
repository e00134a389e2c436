//! Remote hosts by ssh alias: the connection and its quoting, the host's
//! long-lived shell session, and its panes' processes read remotely.

pub mod host;
pub mod procs;
pub mod ssh;
