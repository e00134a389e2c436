//! A seccomp fence for ONE thread: after [`forbid_process_creation_on_this_thread`]
//! every syscall that can create a process fails with EPERM on that thread.
//! Shared by the lead no-subprocess test and the lead pass benchmark.

use seccompiler::{BpfProgram, SeccompAction, SeccompFilter};

/// Every syscall that can create a process on this architecture (the
/// numbers from libc: seccomp matches numbers, not names).
fn process_creating_syscalls() -> Vec<i64> {
    let mut calls = vec![
        libc::SYS_clone,
        libc::SYS_clone3,
        libc::SYS_execve,
        libc::SYS_execveat,
    ];
    #[cfg(target_arch = "x86_64")]
    calls.extend([libc::SYS_fork, libc::SYS_vfork]);
    calls
}

/// Fences the CALLING THREAD only (no TSYNC): from now on, any attempt it
/// makes to create a process fails with EPERM.
pub fn forbid_process_creation_on_this_thread() {
    let filter = SeccompFilter::new(
        // No argument conditions: each of them is refused, whatever it asks.
        process_creating_syscalls()
            .into_iter()
            .map(|nr| (nr, Vec::new()))
            .collect(),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        std::env::consts::ARCH
            .try_into()
            .expect("seccomp filters for this architecture"),
    )
    .expect("a valid seccomp filter");
    let program: BpfProgram = filter.try_into().expect("the filter compiles to BPF");
    // Sets PR_SET_NO_NEW_PRIVS, then the filter, on this thread alone.
    seccompiler::apply_filter(&program).expect("seccomp applies on this thread");
}
