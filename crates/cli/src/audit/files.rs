//! The project's files as the citation check reads them: inside the project
//! only (a symlink that leads out is no file of the project), bounded, never
//! blocking on a FIFO.

use std::path::{Path, PathBuf};

/// A file larger than this is not a source file a citation can point into.
const MAX_FILE_BYTES: u64 = 8 << 20;

/// Reads cited files under `root` (canonical), caching each.
pub(super) struct ProjectTree {
    root: PathBuf,
    cache: std::collections::HashMap<String, Option<Vec<String>>>,
}

impl ProjectTree {
    pub(super) fn new(root: PathBuf) -> ProjectTree {
        ProjectTree {
            root,
            cache: std::collections::HashMap::new(),
        }
    }

    fn read(&self, relative: &str) -> Option<Vec<String>> {
        let path = self.root.join(relative);
        let real = path.canonicalize().ok()?;
        if !real.starts_with(&self.root) {
            return None;
        }
        let text = probes::file::read_regular_text(&real, MAX_FILE_BYTES).ok()?;
        Some(text.lines().map(str::to_string).collect())
    }
}

impl watchdog::audit::cite::ProjectFiles for ProjectTree {
    fn lines(&mut self, path: &str) -> Option<Vec<String>> {
        if let Some(cached) = self.cache.get(path) {
            return cached.clone();
        }
        let lines = self.read(path);
        self.cache.insert(path.to_string(), lines.clone());
        lines
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
