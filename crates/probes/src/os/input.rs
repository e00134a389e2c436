//! Lines from a pipe (the lead monitor's stdin), read without a thread and
//! without ever blocking: `poll` says what is already there, one `read` takes
//! it. So "every line the Lead has written so far" is something the monitor
//! can know before a pass, which a reader thread racing the first pass cannot
//! promise.
//!
//! What one pass reads is bounded: at most [`PASS_BYTES`] between two
//! [`Lines::refill`]s, at most `CALL_TIME` (100 ms) per [`Lines::available`], and
//! never past a stop request. A source that never runs dry (`< /dev/zero`,
//! a writer flooding one endless line) costs that much per pass and no more:
//! the loop gets back to its pass and its stop flag, and once the budget is
//! spent [`Lines::wait`] sleeps instead of waking for it.

use std::fs::File;
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, Timespec, poll};

/// Complete lines from a file descriptor, as they become readable.
pub struct Lines {
    /// `None` once end of file was read (or the descriptor was never open).
    file: Option<File>,
    /// Bytes read after the last newline.
    partial: Vec<u8>,
    /// Dropping the rest of a line longer than [`MAX_LINE_BYTES`].
    skipping: bool,
    /// Lines dropped for their length since [`Lines::overlong`] was asked.
    overlong: u64,
    /// Bytes this pass may still read ([`PASS_BYTES`] at each refill).
    budget: usize,
}

/// The most one pass reads (a pass's control messages are a few kilobytes;
/// a flood past this waits for the next pass).
pub const PASS_BYTES: usize = 8 << 20;
/// The longest one [`Lines::available`] call reads before it returns what
/// it has.
const CALL_TIME: Duration = Duration::from_millis(100);

/// The longest line kept (a control message is a few hundred bytes); a
/// longer one is dropped whole and counted, so a line with no end costs
/// this much memory, not its length.
pub const MAX_LINE_BYTES: usize = 1 << 20;
/// Reading stops for this call once this much is waiting to be split.
const MAX_PENDING_BYTES: usize = 4 << 20;

impl Lines {
    /// This process's stdin (a duplicate of fd 0; a closed stdin is at EOF).
    pub fn stdin() -> Lines {
        let fd = std::io::stdin().as_fd().try_clone_to_owned().ok();
        Lines {
            file: fd.map(File::from),
            partial: Vec::new(),
            skipping: false,
            overlong: 0,
            budget: PASS_BYTES,
        }
    }

    /// Lines from `fd` (a pipe the monitor reads, not this process's stdin).
    pub fn from_fd(fd: OwnedFd) -> Lines {
        Lines {
            file: Some(File::from(fd)),
            partial: Vec::new(),
            skipping: false,
            overlong: 0,
            budget: PASS_BYTES,
        }
    }

    /// False once end of file has been read.
    pub fn is_open(&self) -> bool {
        self.file.is_some()
    }

    /// A new pass: it may read [`PASS_BYTES`] again.
    pub fn refill(&mut self) {
        self.budget = PASS_BYTES;
    }

    /// True when this pass's budget is spent: nothing more is read until
    /// the next [`Lines::refill`].
    pub fn spent(&self) -> bool {
        self.budget == 0
    }

    /// Every line that is readable now, in order, without blocking, within
    /// the pass's budget, `CALL_TIME` and a stop request. At end of file
    /// an unterminated last line is returned too. A line is taken as UTF-8,
    /// invalid bytes replaced.
    pub fn available(&mut self) -> Vec<String> {
        let mut buf = [0u8; 64 * 1024];
        let started = std::time::Instant::now();
        while let Some(file) = &self.file {
            if self.partial.len() > MAX_PENDING_BYTES
                || self.budget == 0
                || started.elapsed() >= CALL_TIME
                || crate::os::signals::stop_requested()
                || !readable(file, Duration::ZERO)
            {
                break;
            }
            let room = buf.len().min(self.budget);
            match (&*file).read(&mut buf[..room]) {
                Ok(0) | Err(_) => self.file = None,
                Ok(n) => {
                    self.budget -= n;
                    self.take(&buf[..n]);
                }
            }
        }
        let mut lines = Vec::new();
        let mut start = 0;
        while let Some(at) = self.partial[start..].iter().position(|&b| b == b'\n') {
            let line = &self.partial[start..start + at];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            lines.push(String::from_utf8_lossy(line).into_owned());
            start += at + 1;
        }
        self.partial.drain(..start);
        if self.file.is_none() && !self.partial.is_empty() {
            lines.push(String::from_utf8_lossy(&self.partial).into_owned());
            self.partial.clear();
        }
        lines
    }

    /// How many lines were dropped for being longer than [`MAX_LINE_BYTES`]
    /// since the last call.
    pub fn overlong(&mut self) -> u64 {
        std::mem::take(&mut self.overlong)
    }

    /// Adds read bytes, dropping the rest of a line that grew past the cap.
    fn take(&mut self, mut data: &[u8]) {
        if self.skipping {
            match data.iter().position(|&b| b == b'\n') {
                None => return,
                Some(at) => {
                    self.skipping = false;
                    data = &data[at + 1..];
                }
            }
        }
        self.partial.extend_from_slice(data);
        let tail = self
            .partial
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |at| at + 1);
        if self.partial.len() - tail > MAX_LINE_BYTES {
            self.partial.truncate(tail);
            self.skipping = true;
            self.overlong += 1;
        }
    }

    /// Waits up to `timeout` for something to read (or end of file), or a
    /// stop request. Once closed, or with the pass's budget spent, there is
    /// nothing to wait for here: it sleeps the time out.
    pub fn wait(&self, timeout: Duration) {
        match &self.file {
            Some(file) if self.budget > 0 => {
                readable(file, timeout);
            }
            _ => {
                crate::os::signals::sleep_unless_stopped(timeout);
            }
        }
    }
}

/// `poll` for input, hang-up or error on `file` for up to `timeout`. A
/// signal that interrupts the wait is "nothing yet".
fn readable(file: &File, timeout: Duration) -> bool {
    let mut fds = [PollFd::new(file, PollFlags::IN)];
    // A wait past what a timespec holds is as good as forever.
    let timeout = Timespec::try_from(timeout).ok();
    matches!(poll(&mut fds, timeout.as_ref()), Ok(n) if n > 0)
        && fds[0]
            .revents()
            .intersects(PollFlags::IN | PollFlags::HUP | PollFlags::ERR)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_line_with_no_end_costs_the_cap_and_is_counted_once() {
        let (reader, mut writer) = std::io::pipe().unwrap();
        let mut lines = Lines::from_fd(OwnedFd::from(reader));
        let writer_thread = std::thread::spawn(move || {
            writer.write_all(b"before\n").unwrap();
            let chunk = vec![b'x'; 64 * 1024];
            for _ in 0..(3 * MAX_LINE_BYTES / chunk.len()) {
                writer.write_all(&chunk).unwrap();
            }
            writer.write_all(b"tail\nafter\n").unwrap();
        });
        let mut got = Vec::new();
        while lines.is_open() || !got.contains(&"after".to_string()) {
            got.extend(lines.available());
            assert!(lines.partial.len() <= MAX_PENDING_BYTES + MAX_LINE_BYTES);
            if got.contains(&"after".to_string()) {
                break;
            }
            lines.wait(Duration::from_millis(50));
        }
        writer_thread.join().unwrap();
        assert_eq!(got, ["before", "after"]);
        assert_eq!(lines.overlong(), 1);
        assert_eq!(lines.overlong(), 0);
    }

    #[test]
    fn a_source_that_never_runs_dry_is_read_within_the_pass_budget() {
        let zero = std::fs::File::open("/dev/zero").unwrap();
        let mut lines = Lines::from_fd(OwnedFd::from(zero));
        let mut calls = 0;
        while !lines.spent() {
            assert!(lines.available().is_empty());
            calls += 1;
        }
        assert!(calls >= 1);
        assert!(lines.available().is_empty(), "spent: reads nothing more");
        assert_eq!(lines.overlong(), 1, "one endless line");
        lines.refill();
        assert!(!lines.spent());
        lines.available();
        assert!(lines.is_open());
    }

    #[test]
    fn lines_already_in_the_pipe_are_all_there_without_blocking() {
        let (reader, mut writer) = std::io::pipe().unwrap();
        let mut lines = Lines::from_fd(OwnedFd::from(reader));
        assert!(lines.available().is_empty(), "nothing written: no block");
        writer.write_all(b"one\ntwo\r\nthr").unwrap();
        assert_eq!(lines.available(), ["one", "two"]);
        writer.write_all(b"ee\n").unwrap();
        assert_eq!(lines.available(), ["three"]);
        writer.write_all(b"last, unterminated").unwrap();
        drop(writer);
        assert_eq!(lines.available(), ["last, unterminated"]);
        assert!(!lines.is_open());
        assert!(lines.available().is_empty());
    }

    #[test]
    fn more_than_one_read_buffer_is_taken_whole() {
        let (reader, mut writer) = std::io::pipe().unwrap();
        let mut lines = Lines::from_fd(OwnedFd::from(reader));
        let line = "x".repeat(40_000);
        let writer = std::thread::spawn(move || {
            for _ in 0..5 {
                writeln!(writer, "{line}").unwrap();
            }
        });
        let mut got = Vec::new();
        while lines.is_open() {
            lines.wait(Duration::from_secs(5));
            got.extend(lines.available());
        }
        writer.join().unwrap();
        assert_eq!(got.len(), 5);
        assert!(got.iter().all(|l| l.len() == 40_000));
    }
}
