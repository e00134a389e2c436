//! What the end-to-end tests and benchmarks share, and nothing the product
//! uses: the one harness that starts the binary ([`bin`]), a private tmux
//! server per test ([`tmux`]), a real sshd on 127.0.0.1 ([`sshd`]), a real
//! Alertmanager on 127.0.0.1 ([`alertmanager`]), and a
//! seccomp fence that forbids process creation on one thread ([`fence`]).
//! Each cleans up exactly what it started, by socket or pid.

pub mod alertmanager;
pub mod bin;
pub mod fence;
pub mod sshd;
pub mod tmux;
