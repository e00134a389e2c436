//! What the kernel says about processes, this process and its
//! surroundings: liveness and pid files, the `/proc` scan, CPU samples,
//! signals, the clock, stdin lines, the terminal and the user.

pub mod clock;
pub mod cpu;
pub mod input;
pub mod own;
pub mod pid;
pub mod pid_files;
mod pidfd;
pub mod process;
pub mod procfs;
pub mod signals;
pub mod terminal;
pub mod user;
