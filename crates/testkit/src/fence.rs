//! A seccomp fence for ONE thread: after [`forbid_process_creation_on_this_thread`]
//! every syscall that can create a process fails with EPERM on that thread.
//! Shared by the lead no-subprocess test and the lead pass benchmark.

#[repr(C)]
struct SockFilter {
    code: u16,
    jt: u8,
    jf: u8,
    k: u32,
}

#[repr(C)]
struct SockFprog {
    len: u16,
    filter: *const SockFilter,
}

// Classic BPF opcodes: BPF_LD|BPF_W|BPF_ABS, BPF_JMP|BPF_JEQ|BPF_K, BPF_RET|BPF_K.
const BPF_LD_W_ABS: u16 = 0x20;
const BPF_JMP_JEQ_K: u16 = 0x15;
const BPF_RET_K: u16 = 0x06;
const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
const SECCOMP_MODE_FILTER: libc::c_ulong = 2;

/// Every syscall that can create a process on this architecture.
fn process_creating_syscalls() -> Vec<libc::c_long> {
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
    let calls = process_creating_syscalls();
    let mut program = vec![SockFilter {
        code: BPF_LD_W_ABS,
        jt: 0,
        jf: 0,
        k: 0, // offsetof(struct seccomp_data, nr)
    }];
    for (i, nr) in calls.iter().enumerate() {
        // On a match, jump to the EPERM return just past the remaining checks.
        let to_deny = (calls.len() - i) as u8;
        program.push(SockFilter {
            code: BPF_JMP_JEQ_K,
            jt: to_deny,
            jf: 0,
            k: *nr as u32,
        });
    }
    program.push(SockFilter {
        code: BPF_RET_K,
        jt: 0,
        jf: 0,
        k: SECCOMP_RET_ALLOW,
    });
    program.push(SockFilter {
        code: BPF_RET_K,
        jt: 0,
        jf: 0,
        k: SECCOMP_RET_ERRNO | libc::EPERM as u32,
    });
    let prog = SockFprog {
        len: program.len() as u16,
        filter: program.as_ptr(),
    };
    // SAFETY: plain prctl calls; `prog` and `program` outlive the call, and the
    // kernel copies the filter.
    unsafe {
        assert_eq!(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
        assert_eq!(
            libc::prctl(
                libc::PR_SET_SECCOMP,
                SECCOMP_MODE_FILTER,
                &prog as *const SockFprog,
                0,
                0
            ),
            0,
            "seccomp: {}",
            std::io::Error::last_os_error()
        );
    }
}
