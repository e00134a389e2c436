//! One lead per bmb-dir: its lock, in the folder itself.

use std::fs;
use std::path::Path;

use crate::output::say;

/// The lock of `<bmb-dir>/monitor.lock`; another lead holding it is an
/// error, a lock that cannot be taken at all (a read-only folder) a warning.
pub(super) fn lock_bmb_dir(bmb_dir: &Path) -> Result<Option<probes::fs::lock::Lock>, String> {
    if let Err(err) = fs::create_dir_all(bmb_dir) {
        return Err(format!("cannot create {}: {err}", bmb_dir.display()));
    }
    match probes::fs::lock::try_lock(&bmb_dir.join("monitor.lock")) {
        Ok(lock) => {
            crate::output::end_orphans(&lock, "lead");
            Ok(Some(lock))
        }
        Err(probes::fs::lock::LockError::Held(pid)) => {
            let by = pid.map_or_else(String::new, |pid| format!(" (pid {pid})"));
            Err(format!(
                "{} is already watched by another bmb-monitor lead{by}",
                bmb_dir.display()
            ))
        }
        Err(probes::fs::lock::LockError::Failed(why)) => {
            say(format_args!(
                "bmb-monitor: lead: {why}; not guarded against a second lead"
            ));
            Ok(None)
        }
    }
}
