//! A remote host's panes' processes without a fork per process: the
//! foreground of each pane's terminal and Claude Code's session file among
//! its processes, read from the remote `/proc` by shell builtins (`read`
//! and parameter expansion), in the same ssh call as the capture
//! ([`crate::remote::host`]) or in one of its own ([`remote_panes`]).
//!
//! In a watch cycle's session ([`crate::remote::host`]) on a host with awk,
//! one awk run reads every pane's processes instead (`bmb_procs_awk`,
//! `PROCS_AWK`; the builtins' per-pane interpretation was most of the
//! host's cost), printing the same lines; the builtins stay for hosts
//! without awk, for [`remote_panes`], for a failed awk run, and for the
//! walk of a pane whose agent is not known yet.
//!
//! Otherwise the only program the script starts is one `awk` per host, and only in a
//! cycle where some pane's agent is not known yet: a process's environment
//! (`/proc/<pid>/environ`, which names its claude folder) is NUL-separated,
//! which a POSIX shell cannot read. A pane's agent, once found, is
//! remembered ([`AgentMemory`]): later cycles re-read only that pid's stat
//! line and its session file, and search the pane's tree again only when
//! that process is gone (or its pid was reused) or the pane's first process
//! changed.
//!
//! The old scripts forked `sed`, `cut`, `tr`, `cat` and `head` for every
//! process of every pane's tree, every cycle: 3.8 s a cycle for two panes
//! (PERFORMANCE.md).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use crate::agent::claude::{PaneProcesses, SessionFile, SessionSearch};
use crate::os::procfs::ForegroundProcess;
use crate::ssh::quote_literal;

/// A pane's tree is small; this bounds a pathological one.
const MAX_PROCESSES: usize = 256;
/// A session file is a few hundred bytes; the rest of a larger one is not read.
const MAX_FILE_BYTES: usize = 64 * 1024;

/// A pane's agent as found once: its pid, when it started, its session file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownAgent {
    /// The agent's process.
    pub pid: u32,
    /// When it started (clock ticks since boot), so a reused pid is not it.
    pub start_ticks: u64,
    /// Its session file, re-read each cycle.
    pub path: PathBuf,
}

/// One host's agents, by the pid of the pane's first process.
#[derive(Debug, Clone, Default)]
pub struct AgentMemory {
    by_root: HashMap<u32, KnownAgent>,
}

impl AgentMemory {
    /// The agent found under the pane whose first process is `root`, if any.
    pub fn get(&self, root: u32) -> Option<&KnownAgent> {
        self.by_root.get(&root)
    }

    /// What a cycle read for the pane whose first process is `root`: a
    /// session file found is remembered, anything else forgets the pane.
    pub fn learn(&mut self, root: u32, search: &SessionSearch) {
        match search {
            SessionSearch::Found(SessionFile {
                pid,
                path,
                start_ticks: Some(start_ticks),
                ..
            }) => {
                self.by_root.insert(
                    root,
                    KnownAgent {
                        pid: *pid,
                        start_ticks: *start_ticks,
                        path: path.clone(),
                    },
                );
            }
            _ => {
                self.by_root.remove(&root);
            }
        }
    }

    /// The panes' first processes it knows an agent for.
    pub fn roots(&self) -> Vec<u32> {
        let mut roots: Vec<u32> = self.by_root.keys().copied().collect();
        roots.sort_unstable();
        roots
    }

    /// Forgets the panes not read this cycle (closed, respawned).
    pub fn keep_only(&mut self, roots: &[u32]) {
        self.by_root.retain(|root, _| roots.contains(root));
    }

    /// Known agents as data lines of a host's cycle request
    /// (`k ROOT PID START PATH`, the path the rest of the line), for
    /// `roots`. An agent whose path holds a newline is left out: it is
    /// searched for again, as an unknown one is.
    pub fn data_lines(&self, roots: impl IntoIterator<Item = u32>) -> String {
        let mut out = String::new();
        for root in roots {
            if let Some(agent) = self.by_root.get(&root) {
                let path = agent.path.to_string_lossy();
                if path.contains('\n') {
                    continue;
                }
                let _ = writeln!(out, "k {root} {} {} {path}", agent.pid, agent.start_ticks);
            }
        }
        out
    }

    /// Known agents as shell assignments the script reads
    /// (`ka_<root>=PID ks_<root>=START kp_<root>='PATH'`), for `roots`.
    pub fn assignments(&self, roots: impl IntoIterator<Item = u32>) -> String {
        let mut out = String::new();
        for root in roots {
            if let Some(agent) = self.by_root.get(&root) {
                let _ = writeln!(
                    out,
                    "ka_{root}={} ks_{root}={} kp_{root}={}",
                    agent.pid,
                    agent.start_ticks,
                    quote_literal(&agent.path.to_string_lossy())
                );
            }
        }
        out
    }
}

/// The shell functions: `bmb_stat` (one stat line into `st_*`, the fields
/// counted after the LAST `)` as `procfs::Stat` counts them, the name
/// between the first `(` and that `)`), `bmb_children`,
/// `bmb_fg` (the old `remote_foreground_script`'s reading), `bmb_session`
/// (print a session file, bounded), `bmb_walk` (a pane's tree, breadth
/// first), `bmb_find` (the first process of a walked tree with a session
/// file), and `bmb_procs` (all of it for the panes in `$bmb_roots`, pairs
/// `KEY:ROOTPID`). `$bmb_tag` prefixes every line they print.
const FUNCTIONS: &str = r#"bmb_stat() {
  st_line= st_state= st_pgrp= st_tpgid= st_start= st_comm=
  { IFS= read -r st_line < "/proc/$1/stat"; } 2>/dev/null
  case $st_line in *\)*) ;; *) return 1 ;; esac
  # Split at each `)` rather than `${st_line##*\)}`: a longest match
  # of a leading `*` is quadratic in the line in dash and bash alike.
  st_ifs=$IFS
  IFS=')'
  set -- $st_line
  IFS=$st_ifs
  [ $# -ge 2 ] || return 1
  st_comm=${1#*\(}
  while [ $# -gt 2 ]; do shift; st_comm="$st_comm)$1"; done
  set -- $2
  [ $# -ge 20 ] || return 1
  st_state=$1 st_pgrp=$3 st_tpgid=$6
  shift 19
  st_start=$1
}
bmb_children() {
  ch=
  set +f
  for bmb_f in /proc/$1/task/*/children; do
    bmb_c=
    { read -r bmb_c < "$bmb_f"; } 2>/dev/null
    ch="$ch $bmb_c"
  done
  set -f
}
bmb_fg() {
  bmb_stat "$2" || return 0
  bmb_g=$st_tpgid
  case $bmb_g in ''|*[!0-9]*|0) return 0 ;; esac
  bmb_stat "$bmb_g" || return 0
  bmb_name=$st_comm
  bmb_kids=0
  bmb_children "$bmb_g"
  for bmb_c in $ch; do
    bmb_stat "$bmb_c" || continue
    case $st_state in T|t|Z|X) ;; *) [ "$st_pgrp" = "$bmb_g" ] && bmb_kids=1 ;; esac
  done
  bmb_w=
  { read -r bmb_w < "/proc/$bmb_g/wchan"; } 2>/dev/null
  case $bmb_w in n_tty_read*|wait_woken*|poll_schedule_timeout*|do_select*|do_sys_poll*|core_sys_select*|ep_poll*) bmb_kids=0 ;; esac
  printf '%s-FG %s %s %s\n' "$bmb_tag" "$1" "$bmb_kids" "$bmb_name"
}
bmb_session() {
  if [ -f "$4" ] && [ -r "$4" ]; then
    printf '%s-S %s %s %s %s\n' "$bmb_tag" "$1" "$2" "${3:--}" "$4"
    bmb_n=0
    while IFS= read -r bmb_l || [ -n "$bmb_l" ]; do
      bmb_n=$((bmb_n + ${#bmb_l} + 1))
      [ "$bmb_n" -gt @MAX_FILE_BYTES@ ] && break
      printf '%s\n' "$bmb_l"
    done < "$4"
    printf '%s-E\n' "$bmb_tag"
    return 0
  fi
  return 1
}
bmb_walk() {
  bmb_order= bmb_queue=$1 bmb_n=0
  while [ -n "$bmb_queue" ] && [ "$bmb_n" -lt @MAX_PROCESSES@ ]; do
    set -- $bmb_queue
    [ $# -gt 0 ] || break
    bmb_p=$1
    shift
    bmb_queue="$*"
    bmb_n=$((bmb_n + 1))
    bmb_order="$bmb_order $bmb_p"
    bmb_children "$bmb_p"
    bmb_queue="$bmb_queue $ch"
  done
}
bmb_find() {
  eval "bmb_order=\${order_$1-}"
  for bmb_p in $bmb_order; do
    eval "bmb_d=\${dir_$bmb_p-}"
    [ -n "$bmb_d" ] || continue
    bmb_stat "$bmb_p"
    bmb_session "$1" "$bmb_p" "$st_start" "$bmb_d/sessions/$bmb_p.json" && return 0
  done
  printf '%s-N %s\n' "$bmb_tag" "$1"
}
bmb_procs() {
  for bmb_v in $bmb_pvars; do unset "$bmb_v"; done
  bmb_all= bmb_search= bmb_pvars=
  for bmb_kr in $bmb_roots; do
    bmb_k=${bmb_kr%%:*} bmb_r=${bmb_kr#*:}
    case $bmb_k in ''|*[!0-9]*) continue ;; esac
    case $bmb_r in ''|*[!0-9]*) continue ;; esac
    printf '%s-R %s %s\n' "$bmb_tag" "$bmb_k" "$bmb_r"
    bmb_fg "$bmb_k" "$bmb_r"
    [ "$bmb_witness" = 1 ] || continue
    eval "bmb_a=\${ka_$bmb_r-} bmb_s=\${ks_$bmb_r-} bmb_f=\${kp_$bmb_r-}"
    if [ -n "$bmb_a" ] && bmb_stat "$bmb_a" && [ "$st_start" = "$bmb_s" ]; then
      bmb_session "$bmb_k" "$bmb_a" "$bmb_s" "$bmb_f" || printf '%s-N %s\n' "$bmb_tag" "$bmb_k"
      continue
    fi
    bmb_walk "$bmb_r"
    eval "order_$bmb_k=\$bmb_order"
    bmb_pvars="$bmb_pvars order_$bmb_k"
    bmb_all="$bmb_all $bmb_order"
    bmb_search="$bmb_search $bmb_k"
  done
  bmb_procs_dirs
}
bmb_procs_dirs() {
  if [ -n "$bmb_all" ]; then
    bmb_dirs=$(awk 'BEGIN {
      RS = "\0"
      for (i = 1; i < ARGC; i++) {
        f = "/proc/" ARGV[i] "/environ"; c = ""; h = ""
        while ((getline e < f) > 0) {
          if (c == "" && index(e, "CLAUDE_CONFIG_DIR=") == 1) c = substr(e, 19)
          else if (h == "" && index(e, "HOME=") == 1) h = substr(e, 6)
        }
        close(f)
        if (c != "") print ARGV[i], c
        else if (h != "") print ARGV[i], h "/.claude"
      }
      exit
    }' $bmb_all 2>/dev/null)
    while read -r bmb_p bmb_d; do
      case $bmb_p in ''|*[!0-9]*) continue ;; esac
      eval "dir_$bmb_p=\$bmb_d"
      bmb_pvars="$bmb_pvars dir_$bmb_p"
    done <<BMB_DIRS
$bmb_dirs
BMB_DIRS
  fi
  for bmb_k in $bmb_search; do
    bmb_find "$bmb_k"
  done
}
bmb_known() {
  bmb_x=$1
  bmb_kr=${bmb_x%% *} bmb_x=${bmb_x#* }
  bmb_ka=${bmb_x%% *} bmb_x=${bmb_x#* }
  bmb_ks=${bmb_x%% *} bmb_x=${bmb_x#* }
  case $bmb_kr:$bmb_ka:$bmb_ks in *[!0-9:]*|:*|*::*|*:) return 0 ;; esac
  eval "ka_$bmb_kr=\$bmb_ka ks_$bmb_kr=\$bmb_ks kp_$bmb_kr=\$bmb_x"
  bmb_vars="$bmb_vars ka_$bmb_kr ks_$bmb_kr kp_$bmb_kr"
}
bmb_procs_awk() {
  for bmb_v in $bmb_pvars; do unset "$bmb_v"; done
  bmb_all= bmb_search= bmb_pvars=
  : >"$bmb_dir/f"
  set +f
  set -- $bmb_globs
  set -f
  if ! awk -v roots="$bmb_roots" -v tag="$bmb_tag" -v witness="$bmb_witness" \
    -v max_bytes=@MAX_FILE_BYTES@ -v kok="$bmb_kok" -v search="$bmb_dir/f" \
    "$bmb_procs_prog" "$bmb_dir/k" "$@"; then
    # What it printed before it failed is dropped by the reader at this
    # mark; the builtins read every pane again.
    printf '%s-AGAIN\n' "$bmb_tag"
    while IFS= read -r bmb_l; do bmb_known "${bmb_l#k }"; done <"$bmb_dir/k"
    bmb_procs
    return
  fi
  [ -s "$bmb_dir/f" ] || return 0
  while read -r bmb_k bmb_r; do
    bmb_walk "$bmb_r"
    eval "order_$bmb_k=\$bmb_order"
    bmb_pvars="$bmb_pvars order_$bmb_k"
    bmb_all="$bmb_all $bmb_order"
    bmb_search="$bmb_search $bmb_k"
  done <"$bmb_dir/f"
  bmb_procs_dirs
}
"#;

/// `bmb_procs_awk`'s program: per pane of `roots` what `bmb_procs` prints
/// (its `R` and `FG` lines, a known agent's session file or `N`), byte for
/// byte, from one awk run that reads `/proc` in blocks where the builtins'
/// per-pane interpretation cost ~1.75 ms a pane (PERFORMANCE.md). The
/// panes whose agent is not known are written to `search` (`KEY ROOT`)
/// for the builtins' walk. ARGV\[1\] is the known agents' data lines
/// (`k ROOT PID START PATH`), the j-th readable as a regular file when
/// `kok`'s j-th character is `1` (awk cannot stat, and a FIFO would block
/// its read); the rest are the `children` files of the panes' foreground
/// leaders, expanded by the shell (awk cannot list a folder). A session
/// file is cut after `max_bytes` bytes where the builtins count characters:
/// the same on the few hundred ASCII bytes such a file holds.
const PROCS_AWK: &str = r#"
BEGIN {
  for (i = 2; i < ARGC; i++) {
    split(ARGV[i], pp, "/")
    kids_files[pp[3]] = kids_files[pp[3]] " " ARGV[i]
    delete ARGV[i]
  }
}
function bmb_stat(pid,   f, line, n, x, q) {
  st_state = st_pgrp = st_tpgid = st_start = st_comm = ""
  f = "/proc/" pid "/stat"
  if ((getline line < f) <= 0) { close(f); return 0 }
  close(f)
  if (!match(line, /.*\)/)) return 0
  n = split(substr(line, RLENGTH + 1), x)
  if (n < 20) return 0
  q = index(substr(line, 1, index(line, ")") - 1), "(")
  st_comm = substr(line, q + 1, RLENGTH - q - 1)
  st_state = x[1]; st_pgrp = x[3]; st_tpgid = x[6]; st_start = x[20]
  return 1
}
function first_line(f,   line) {
  line = ""
  if ((getline line < f) <= 0) line = ""
  close(f)
  return line
}
function bmb_fg(key, root,   g, name, kids, nf, files, i, nc, c, j, w) {
  if (!bmb_stat(root)) return
  g = st_tpgid
  if (g !~ /^[0-9]+$/ || g == "0") return
  if (!bmb_stat(g)) return
  name = st_comm
  kids = 0
  # A leader waiting on its terminal or on events runs no child in front,
  # whatever its children: then they are not read (a node agent's threads
  # are a dozen `children` files).
  w = first_line("/proc/" g "/wchan")
  sub(/^[ \t]+/, "", w)
  if (w !~ /^(n_tty_read|wait_woken|poll_schedule_timeout|do_select|do_sys_poll|core_sys_select|ep_poll)/) {
    # A leader the shell did not expand for (the foreground moved since the
    # pick): its main thread's children alone.
    nf = split((g in kids_files) ? kids_files[g] : "/proc/" g "/task/" g "/children", files, " ")
    for (i = 1; i <= nf && !kids; i++) {
      nc = split(first_line(files[i]), c)
      for (j = 1; j <= nc && !kids; j++) {
        if (!bmb_stat(c[j])) continue
        if (st_state !~ /^[TtZX]$/ && (st_pgrp "") == (g "")) kids = 1
      }
    }
  }
  print tag "-FG " key " " kids " " name
}
function bmb_session(key, pid, start, path, ok,   r, l, n) {
  if (!ok) return 0
  r = (getline l < path)
  if (r < 0) { close(path); return 0 }
  print tag "-S " key " " pid " " (start == "" ? "-" : start) " " path
  n = 0
  while (r > 0) {
    n += length(l) + 1
    if (n > max_bytes) break
    print l
    r = (getline l < path)
  }
  close(path)
  print tag "-E"
  return 1
}
$1 == "k" && $2 ~ /^[0-9]+$/ && $3 ~ /^[0-9]+$/ && $4 ~ /^[0-9]+$/ {
  path = $0
  for (i = 1; i <= 4; i++) sub(/^[^ ]* /, "", path)
  ka[$2] = $3; ks[$2] = $4; kp[$2] = path; kk[$2] = (substr(kok, FNR, 1) == "1")
}
END {
  n = split(roots, kr, " ")
  for (i = 1; i <= n; i++) {
    c = index(kr[i], ":"); key = substr(kr[i], 1, c - 1); root = substr(kr[i], c + 1)
    if (c == 0 || key !~ /^[0-9]+$/ || root !~ /^[0-9]+$/) continue
    print tag "-R " key " " root
    bmb_fg(key, root)
    if (witness != 1) continue
    if ((root in ka) && bmb_stat(ka[root]) && st_start == (ks[root] "")) {
      if (!bmb_session(key, ka[root], ks[root], kp[root], kk[root])) print tag "-N " key
      continue
    }
    print key, root > search
  }
}
"#;

/// The functions, with their bounds filled in.
pub(crate) fn functions() -> String {
    FUNCTIONS
        .replace("@MAX_FILE_BYTES@", &MAX_FILE_BYTES.to_string())
        .replace("@MAX_PROCESSES@", &MAX_PROCESSES.to_string())
}

/// `bmb_procs_awk`'s awk program ([`PROCS_AWK`]), which the session holds
/// in `$bmb_procs_prog`.
pub(crate) fn awk_program() -> &'static str {
    PROCS_AWK
}

/// A whole script for the panes `(key, root pid)` alone: what
/// [`remote_panes`] runs when no capture rides along.
pub fn script(
    tag: &str,
    panes: &[(usize, u32)],
    with_session: bool,
    memory: &AgentMemory,
) -> String {
    let roots: Vec<String> = panes
        .iter()
        .map(|(key, root)| format!("{key}:{root}"))
        .collect();
    format!(
        "bmb_main() {{\nset -f\n{functions}bmb_tag={tag}\nbmb_witness={witness}\n{known}bmb_roots='{roots}'\nbmb_procs\n}}\nbmb_main </dev/null\nexit 0\n",
        functions = functions(),
        witness = u8::from(with_session),
        known = memory.assignments(panes.iter().map(|&(_, root)| root)),
        roots = roots.join(" "),
    )
}

/// What the script said about one pane.
#[derive(Debug, Clone, Default)]
pub struct PaneReading {
    /// The pane's first process as the script saw it.
    pub root: Option<u32>,
    /// What runs in the pane's foreground; `None` when it could not be read.
    pub foreground: Option<ForegroundProcess>,
    /// `None` when the script said nothing about a session file for it.
    pub session: Option<SessionSearch>,
}

/// Reads the lines the functions printed (after `tag`) into one reading per
/// key. A key said twice (a session file that printed our marker lines) is
/// a failed reading, not a forged one. What came before an `AGAIN` line
/// (the awk reading failed, the builtins' follows) is dropped.
pub fn parse(tag: &str, output: &str) -> HashMap<usize, PaneReading> {
    let mut found: HashMap<usize, PaneReading> = HashMap::new();
    let mut repeated: Vec<usize> = Vec::new();
    let prefix = format!("{tag}-");
    let end = format!("{tag}-E");
    let again = format!("{tag}-AGAIN");
    let mut lines = output.lines();
    while let Some(line) = lines.next() {
        // The awk reading failed part way: the builtins' reading that
        // follows is the whole answer.
        if line == again {
            found.clear();
            repeated.clear();
            continue;
        }
        let Some(rest) = line.strip_prefix(&prefix) else {
            continue;
        };
        let Some((kind, rest)) = rest.split_once(' ') else {
            continue;
        };
        let mut fields = rest.splitn(2, ' ');
        let Some(key) = fields.next().and_then(|k| k.parse::<usize>().ok()) else {
            continue;
        };
        let rest = fields.next().unwrap_or("");
        let reading = found.entry(key).or_default();
        match kind {
            "R" => {
                if reading.root.is_some() {
                    repeated.push(key);
                }
                reading.root = rest.parse().ok();
            }
            "FG" => {
                let mut fields = rest.splitn(2, ' ');
                let running_child = match fields.next() {
                    Some("1") => true,
                    Some("0") => false,
                    _ => continue,
                };
                if reading.foreground.is_some() {
                    repeated.push(key);
                }
                reading.foreground = Some(ForegroundProcess {
                    comm: fields.next().unwrap_or("").to_string(),
                    running_child,
                    children_in_front: Vec::new(),
                    outer: Vec::new(),
                });
            }
            "S" => {
                let mut fields = rest.splitn(3, ' ');
                let (Some(pid), Some(start), Some(path)) =
                    (fields.next(), fields.next(), fields.next())
                else {
                    continue;
                };
                let text: Vec<&str> = lines.by_ref().take_while(|l| *l != end).collect();
                let Ok(pid) = pid.parse() else { continue };
                if reading.session.is_some() {
                    repeated.push(key);
                }
                reading.session = Some(SessionSearch::Found(SessionFile {
                    pid,
                    path: PathBuf::from(path),
                    text: text.join("\n"),
                    start_ticks: start.parse().ok(),
                }));
            }
            "N" => {
                if reading.session.is_some() {
                    repeated.push(key);
                }
                reading.session = Some(SessionSearch::None);
            }
            _ => {}
        }
    }
    for key in repeated {
        found.insert(
            key,
            PaneReading {
                root: None,
                foreground: None,
                session: Some(SessionSearch::Failed(
                    "the process reading repeated its marker lines (a session file printed them)"
                        .to_string(),
                )),
            },
        );
    }
    found
}

/// One pane's processes from its reading: `with_session` says whether the
/// session file was asked for; `failed` says why the call gave no answer.
pub fn pane_processes(
    reading: Option<PaneReading>,
    with_session: bool,
    failed: Option<&str>,
) -> PaneProcesses {
    let reading = reading.unwrap_or_default();
    let session = match (with_session, reading.session, failed) {
        (false, _, _) => SessionSearch::NotAsked,
        (true, Some(session), _) => session,
        (true, None, Some(why)) => SessionSearch::Failed(why.to_string()),
        (true, None, None) => SessionSearch::None,
    };
    PaneProcesses {
        foreground: reading.foreground,
        session,
    }
}

/// Every pane of one remote host in ONE bounded ssh call, without a fork
/// per process ((the script here)): the foreground of each, and with
/// `with_session` its session file. In the order of `pane_pids`. A watch
/// cycle reads its panes' processes in the capture's own call
/// ([`crate::remote::host`]); this is for a pane read outside it.
pub fn remote_panes(
    ssh: &crate::ssh::Remote,
    pane_pids: &[u32],
    with_session: bool,
    limits: &crate::run::Limits,
) -> Vec<PaneProcesses> {
    let tag = format!("BMB-{}", crate::tmux::fresh_nonce());
    let keyed: Vec<(usize, u32)> = pane_pids.iter().copied().enumerate().collect();
    let script = script(&tag, &keyed, with_session, &AgentMemory::default());
    let outcome = crate::run::run(&ssh.invocation(&script), limits);
    let text = outcome.success_stdout().map(|out| out.text());
    let mut read = text
        .as_deref()
        .map(|text| parse(&tag, text))
        .unwrap_or_default();
    let failed = text.is_none().then(|| {
        format!(
            "the session-file search on {} {}",
            ssh.alias,
            outcome.describe()
        )
    });
    (0..pane_pids.len())
        .map(|key| pane_processes(read.remove(&key), with_session, failed.as_deref()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `script` under `sh`, as a remote login shell would.
    fn sh(shell: &str, script: &str, home: &std::path::Path) -> String {
        let invocation = crate::run::Invocation::new(shell)
            .arg("-c")
            .arg(script)
            .env("HOME", home);
        let outcome = crate::run::run(&invocation, &crate::run::Limits::default());
        outcome
            .success_stdout()
            .unwrap_or_else(|| panic!("{shell}: {}", outcome.describe()))
            .text()
    }

    /// A shell plays the agent: it writes its own session file under a
    /// temporary HOME, then runs the script with itself as the pane.
    fn as_the_agent(shell: &str, memory: &AgentMemory) -> (String, u32, String) {
        let home = tempfile::tempdir().unwrap();
        let setup = r#"mkdir -p "$HOME/.claude/sessions"; printf '{"status":"busy"}\n{"x":1}' > "$HOME/.claude/sessions/$$.json"; "#;
        let body = script("T1", &[(7, 4_000_000_000)], true, memory)
            .replace("bmb_roots='7:4000000000'", "bmb_roots=\"7:$$\"");
        let out = sh(
            shell,
            &format!("{setup}echo \"PID $$\"; {body}"),
            home.path(),
        );
        let pid = out
            .lines()
            .find_map(|l| l.strip_prefix("PID "))
            .and_then(|p| p.parse().ok())
            .expect("the shell's pid");
        (out, pid, home.path().display().to_string())
    }

    #[test]
    fn the_script_finds_the_same_file_and_foreground_as_the_local_reading_in_dash_and_bash() {
        for shell in ["dash", "bash"] {
            let (out, pid, home) = as_the_agent(shell, &AgentMemory::default());
            let read = parse("T1", &out);
            let pane = read.get(&7).unwrap_or_else(|| panic!("{shell}: {out}"));
            assert_eq!(pane.root, Some(pid), "{shell}: {out}");
            let Some(SessionSearch::Found(file)) = &pane.session else {
                panic!("{shell}: {out}")
            };
            assert_eq!(file.pid, pid);
            assert_eq!(file.text, "{\"status\":\"busy\"}\n{\"x\":1}", "{shell}");
            assert_eq!(
                file.path,
                PathBuf::from(format!("{home}/.claude/sessions/{pid}.json"))
            );
            // The start time is the one procfs reads (the shell has exited by
            // now, so it is compared with the script's own field count).
            assert!(file.start_ticks.is_some_and(|t| t > 0), "{shell}: {out}");
        }
    }

    #[test]
    fn a_known_agent_is_rechecked_without_a_search_and_a_stale_one_is_searched_again() {
        // The agent: a process that writes its own session file under its HOME.
        let home = tempfile::tempdir().unwrap();
        let ready = home.path().join("ready");
        let agent = crate::run::Background::start(
            &crate::run::Invocation::shell(format!(
                r#"mkdir -p "$HOME/.claude/sessions"; printf '{{"status":"busy"}}' > "$HOME/.claude/sessions/$$.json"; : > '{}'; exec sleep 600"#,
                ready.display()
            ))
            .env("HOME", home.path()),
            None,
        )
        .unwrap();
        let pid = agent.id();
        while !ready.exists() {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let start = crate::os::procfs::Stat::of(pid)
            .unwrap()
            .start_ticks()
            .unwrap();
        let elsewhere = home.path().join("it's elsewhere.json");
        std::fs::write(&elsewhere, "{\"status\":\"idle\"}").unwrap();
        let read = |known: KnownAgent| {
            let mut memory = AgentMemory::default();
            memory.by_root.insert(pid, known);
            let out = sh(
                "dash",
                &script("T1", &[(7, pid)], true, &memory),
                home.path(),
            );
            match parse("T1", &out).remove(&7).and_then(|p| p.session) {
                Some(SessionSearch::Found(file)) => file,
                other => panic!("{other:?}: {out}"),
            }
        };
        // Known and alive: only the remembered path is read (the search
        // would have found the agent's own file).
        let known = read(KnownAgent {
            pid,
            start_ticks: start,
            path: elsewhere.clone(),
        });
        assert_eq!(
            (known.path, known.text.as_str()),
            (elsewhere.clone(), "{\"status\":\"idle\"}")
        );
        // A start time the process never had: a reused pid, so searched again.
        let searched = read(KnownAgent {
            pid,
            start_ticks: start + 1,
            path: elsewhere,
        });
        assert_eq!(
            searched.path,
            home.path().join(format!(".claude/sessions/{pid}.json"))
        );
        assert_eq!(searched.start_ticks, Some(start));
        agent.stop();
    }

    #[test]
    fn the_remembered_agent_is_read_without_awk() {
        // PATH without awk: a search would find nothing; the known agent is
        // still read, by builtins alone.
        let home = tempfile::tempdir().unwrap();
        let file = home.path().join("s.json");
        std::fs::write(&file, "{\"status\":\"idle\"}").unwrap();
        let me = std::process::id();
        let start = crate::os::procfs::Stat::of(me)
            .unwrap()
            .start_ticks()
            .unwrap();
        let mut memory = AgentMemory::default();
        memory.learn(
            me,
            &SessionSearch::Found(SessionFile {
                pid: me,
                path: file.clone(),
                text: String::new(),
                start_ticks: Some(start),
            }),
        );
        let body = script("T2", &[(0, me)], true, &memory);
        let invocation = crate::run::Invocation::new("/bin/dash")
            .arg("-c")
            .arg(&body)
            .env("PATH", "/nonexistent");
        let outcome = crate::run::run(&invocation, &crate::run::Limits::default());
        let out = outcome.success_stdout().expect("dash ran").text();
        let read = parse("T2", &out);
        let Some(SessionSearch::Found(found)) = read.get(&0).and_then(|p| p.session.clone()) else {
            panic!("{out}")
        };
        assert_eq!(
            (found.pid, found.path, found.text),
            (me, file, "{\"status\":\"idle\"}".to_string())
        );
        assert_eq!(found.start_ticks, Some(start));
    }

    #[test]
    fn a_stat_line_whose_name_holds_parentheses_reads_as_procfs_reads_it() {
        let dir = tempfile::tempdir().unwrap();
        let program = dir.path().join("a) (b) c");
        std::fs::copy("/bin/sleep", &program).unwrap();
        // Ended on drop, even when an assertion fails.
        let child =
            crate::run::Background::start(&crate::run::Invocation::new(&program).arg("600"), None)
                .unwrap();
        let pid = child.id();
        let stat = crate::os::procfs::Stat::of(pid).expect("its stat");
        // Its state may change between two readings; the name and start do not.
        let want = format!("{}|{}\n", stat.comm(), stat.start_ticks().unwrap());
        assert_eq!(stat.comm(), "a) (b) c");
        for shell in ["dash", "bash"] {
            let body = format!(
                "set -f\n{}bmb_stat {pid} && printf '%s|%s\\n' \"$st_comm\" \"$st_start\"\n",
                functions()
            );
            assert_eq!(sh(shell, &body, dir.path()), want, "{shell}");
        }
    }

    #[test]
    fn the_foreground_agrees_with_the_local_reading() {
        let me = std::process::id();
        let body = script(
            "T3",
            &[(0, me), (1, 1), (2, 999_999_999)],
            false,
            &AgentMemory::default(),
        );
        let out = sh("dash", &body, std::path::Path::new("/"));
        let read = parse("T3", &out);
        for (key, pid) in [(0, me), (1, 1)] {
            let local = crate::os::procfs::foreground_of(pid, &[]);
            let remote = read.get(&key).and_then(|p| p.foreground.clone());
            assert_eq!(
                local.map(|f| (f.comm, f.running_child)),
                remote.map(|f| (f.comm, f.running_child)),
                "pid {pid}: {out}"
            );
        }
        assert!(read.get(&2).is_none_or(|p| p.foreground.is_none()));
        assert!(read.values().all(|p| p.session.is_none()), "{out}");
    }

    #[test]
    fn a_marker_a_session_file_repeats_fails_that_pane_only() {
        let out = "T-R 0 10\nT-S 0 11 5 /x.json\n{}\nT-E\nT-N 0\nT-R 1 12\nT-FG 1 1 claude\nT-N 1\nT-FG x 1 sh\nT-FG 2 7 sh\nnoise";
        let read = parse("T", out);
        assert!(matches!(read[&0].session, Some(SessionSearch::Failed(_))));
        assert_eq!(read[&1].root, Some(12));
        assert_eq!(
            read[&1]
                .foreground
                .as_ref()
                .map(|f| (f.comm.as_str(), f.running_child)),
            Some(("claude", true))
        );
        assert!(read.get(&2).is_none_or(|p| p.foreground.is_none()));
    }

    #[test]
    fn memory_keeps_a_found_agent_and_forgets_the_rest() {
        let mut memory = AgentMemory::default();
        let found = SessionSearch::Found(SessionFile {
            pid: 11,
            path: PathBuf::from("/h/.claude/sessions/11.json"),
            text: String::new(),
            start_ticks: Some(5),
        });
        memory.learn(10, &found);
        memory.learn(20, &found);
        assert_eq!(memory.get(10).map(|a| a.pid), Some(11));
        memory.learn(10, &SessionSearch::None);
        assert!(memory.get(10).is_none());
        memory.keep_only(&[30]);
        assert!(memory.get(20).is_none());
        // A file without a start time is never trusted later.
        memory.learn(
            40,
            &SessionSearch::Found(SessionFile {
                pid: 41,
                path: PathBuf::new(),
                text: String::new(),
                start_ticks: None,
            }),
        );
        assert!(memory.get(40).is_none());
    }

    #[test]
    fn a_remote_host_that_does_not_answer_is_a_failed_search_for_every_pane() {
        // An alias ssh cannot resolve: the one call fails, and says so per pane.
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("ssh_config");
        std::fs::write(&config, "Host nowhere\n  HostName 127.0.0.1\n  Port 1\n").unwrap();
        let ssh = crate::ssh::Remote {
            alias: "nowhere".to_string(),
            config: Some(config.to_string_lossy().into_owned()),
            connect_timeout: std::time::Duration::from_secs(2),
            control: None,
        };
        let read = remote_panes(&ssh, &[11, 12], true, &crate::run::Limits::default());
        assert_eq!(read.len(), 2);
        for pane in &read {
            assert!(pane.foreground.is_none());
            assert!(
                matches!(&pane.session, SessionSearch::Failed(why) if why.starts_with("the session-file search on nowhere ")),
                "{:?}",
                pane.session
            );
        }
        let unasked = remote_panes(&ssh, &[11], false, &crate::run::Limits::default());
        assert!(matches!(unasked[0].session, SessionSearch::NotAsked));
    }
}
