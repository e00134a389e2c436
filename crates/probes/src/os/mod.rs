//! What the kernel says about processes, this process and its
//! surroundings: liveness, this process's run, the `/proc` scan, CPU samples,
//! signals, the clock, stdin lines, the terminal and the user.

pub mod clock;
pub mod cpu;
pub mod input;
pub mod own;
pub mod pid;
pub(crate) mod pidfd;
pub mod process;
pub mod procfs;
pub(crate) mod run_id;
pub mod signals;
pub mod terminal;
pub mod user;
