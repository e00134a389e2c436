//! The size of the terminal a command prints to.

/// Columns of the terminal on stdout; else `COLUMNS` when it is a number
/// (a pipe into a pager that says its width); else `None`: no terminal.
pub fn stdout_width() -> Option<usize> {
    stdout_size()
        .map(|(columns, _)| columns)
        .or_else(|| from_env("COLUMNS"))
}

/// Rows of the terminal on stdout; else `LINES`; else `None`.
pub fn stdout_height() -> Option<usize> {
    stdout_size()
        .map(|(_, rows)| rows)
        .or_else(|| from_env("LINES"))
}

fn stdout_size() -> Option<(usize, usize)> {
    let stdout = std::io::stdout();
    if !rustix::termios::isatty(&stdout) {
        return None;
    }
    let size = rustix::termios::tcgetwinsize(&stdout).ok()?;
    (size.ws_col > 0 && size.ws_row > 0)
        .then(|| (usize::from(size.ws_col), usize::from(size.ws_row)))
}

fn from_env(name: &str) -> Option<usize> {
    std::env::var(name)
        .ok()
        .and_then(|c| c.trim().parse().ok())
        .filter(|&c: &usize| c > 0)
}
