//! The project's files as the citation check reads them: inside the project
//! only (a symlink that leads out is no file of the project), bounded, never
//! blocking on a FIFO; a file git ignores is never read at all, and a
//! binary one is said to be binary.

use std::path::{Path, PathBuf};
use std::time::Duration;

use ::audit::cite::Look;

/// A file larger than this is not a source file a citation can point into.
const MAX_FILE_BYTES: u64 = 8 << 20;

/// git's own binary test: a NUL byte in the first 8000 bytes.
const BINARY_PROBE_BYTES: usize = 8000;

/// How long git may take to say which files it ignores.
const GIT_TIMEOUT: Duration = Duration::from_secs(30);

/// Reads cited files under `root` (canonical), caching each.
pub(super) struct ProjectTree {
    root: PathBuf,
    root_text: String,
    in_git: bool,
    cache: std::collections::HashMap<String, Look>,
}

impl ProjectTree {
    pub(super) fn new(root: PathBuf) -> ProjectTree {
        ProjectTree {
            root_text: root.to_string_lossy().into_owned(),
            in_git: probes::project::git::check_repository(&root).is_ok(),
            root,
            cache: std::collections::HashMap::new(),
        }
    }

    /// Whether git (or, outside git, the `.gitignore` files) ignores any of
    /// `paths`; a git that cannot answer counts as yes, so a secret is never
    /// read on a failed check.
    ///
    /// `canonical` is the file read and must get an answer; `spelled` (the
    /// path as cited, through a symlink perhaps) is asked too, and counts
    /// only when git answers for it (git refuses a path beyond a symlink).
    fn ignored(&self, canonical: &str, spelled: &str) -> bool {
        if [canonical, spelled]
            .iter()
            .any(|p| p.split('/').any(|part| part == ".git"))
        {
            return true;
        }
        if !self.in_git {
            return [canonical, spelled]
                .iter()
                .any(|p| probes::project::git::ignored_outside_git(&self.root, p));
        }
        let canonical_ignored =
            probes::project::git::ignored(&self.root, &[canonical], GIT_TIMEOUT)
                .map_or(true, |answers| answers.contains(&true));
        canonical_ignored
            || (spelled != canonical
                && probes::project::git::ignored(&self.root, &[spelled], GIT_TIMEOUT)
                    .is_ok_and(|answers| answers.contains(&true)))
    }

    fn read(&self, relative: &str) -> Look {
        let path = self.root.join(relative);
        let Ok(real) = path.canonicalize() else {
            return Look::Missing;
        };
        let Some(canonical) = real
            .strip_prefix(&self.root)
            .ok()
            .and_then(Path::to_str)
            .filter(|c| !c.is_empty())
            .map(str::to_string)
        else {
            return Look::Missing;
        };
        if self.ignored(&canonical, relative) {
            return Look::Ignored;
        }
        let Ok(bytes) = probes::fs::file::read_regular(&real, MAX_FILE_BYTES) else {
            return Look::Missing;
        };
        if bytes[..bytes.len().min(BINARY_PROBE_BYTES)].contains(&0) {
            return Look::Binary;
        }
        let text = String::from_utf8_lossy(&bytes);
        Look::Text {
            canonical,
            lines: text.lines().map(str::to_string).collect(),
        }
    }
}

impl ::audit::cite::ProjectFiles for ProjectTree {
    fn root(&self) -> &str {
        &self.root_text
    }

    fn look(&mut self, path: &str) -> Look {
        if let Some(cached) = self.cache.get(path) {
            return cached.clone();
        }
        let look = self.read(path);
        self.cache.insert(path.to_string(), look.clone());
        look
    }
}

/// The project folder, canonical, or why it is not one.
pub(crate) fn project_root(dir: &Path) -> Result<PathBuf, String> {
    let real = dir
        .canonicalize()
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    if !real.is_dir() {
        return Err(format!("{} is not a folder", dir.display()));
    }
    Ok(real)
}
