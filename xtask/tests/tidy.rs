//! Tidy checks, as ordinary tests so that `cargo test` alone keeps them true:
//! the rules that make the crates publishable (`cargo package` in `.ci/run`)
//! and the project's habits about dependencies, checked on every package of
//! the workspace.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Component, Path, PathBuf};

use toml_edit::{DocumentMut, Item, Table};

/// The prefix every published package's name carries: generic names are
/// taken on crates.io, and an embedder should see whose crate it is.
const NAME_PREFIX: &str = "bmb-";

/// Package fields every package takes from `[workspace.package]`, so one
/// edit changes them everywhere.
const INHERITED: [&str; 4] = ["version", "edition", "license", "repository"];

/// The tables a package's dependencies sit in.
const DEPENDENCY_TABLES: [&str; 3] = ["dependencies", "dev-dependencies", "build-dependencies"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the workspace")
        .to_path_buf()
}

fn read_manifest(path: &Path) -> DocumentMut {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.parse()
        .unwrap_or_else(|e| panic!("{} is not valid TOML: {e}", path.display()))
}

fn workspace() -> DocumentMut {
    read_manifest(&root().join("Cargo.toml"))
}

/// One member of the workspace: its folder and its manifest.
struct Package {
    dir: PathBuf,
    manifest: DocumentMut,
}

impl Package {
    fn name(&self) -> &str {
        self.manifest["package"]["name"]
            .as_str()
            .unwrap_or_else(|| panic!("{}: no package name", self.dir.display()))
    }

    fn published(&self) -> bool {
        self.manifest["package"]
            .get("publish")
            .and_then(Item::as_bool)
            != Some(false)
    }
}

/// The members as `[workspace] members` lists them (a folder, or `folder/*`).
fn packages() -> Vec<Package> {
    let workspace = workspace();
    let members = workspace["workspace"]["members"]
        .as_array()
        .expect("[workspace] members is an array");
    let mut dirs = Vec::new();
    for member in members {
        let member = member.as_str().expect("a member is a path");
        match member.strip_suffix("/*") {
            Some(parent) => {
                let entries = fs::read_dir(root().join(parent)).expect("the members' folder");
                for entry in entries {
                    let dir = entry.expect("a folder entry").path();
                    if dir.join("Cargo.toml").is_file() {
                        dirs.push(dir);
                    }
                }
            }
            None => dirs.push(root().join(member)),
        }
    }
    dirs.sort();
    let packages: Vec<Package> = dirs
        .into_iter()
        .map(|dir| Package {
            manifest: read_manifest(&dir.join("Cargo.toml")),
            dir,
        })
        .collect();
    assert!(
        packages.len() >= 6,
        "the members were not found under {}",
        root().display()
    );
    packages
}

/// Every dependency table of a manifest, with a name for messages:
/// `[dependencies]` and the others, also under `[target.'cfg(…)']`.
fn dependency_tables(manifest: &DocumentMut) -> Vec<(String, &Table)> {
    let mut tables = Vec::new();
    for kind in DEPENDENCY_TABLES {
        if let Some(table) = manifest.get(kind).and_then(Item::as_table) {
            tables.push((kind.to_string(), table));
        }
    }
    if let Some(targets) = manifest.get("target").and_then(Item::as_table) {
        for (target, item) in targets.iter() {
            for kind in DEPENDENCY_TABLES {
                if let Some(table) = item.get(kind).and_then(Item::as_table) {
                    tables.push((format!("target.{target}.{kind}"), table));
                }
            }
        }
    }
    tables
}

#[test]
fn every_published_package_is_named_with_the_project_prefix() {
    for package in packages() {
        if package.published() {
            assert!(
                package.name().starts_with(NAME_PREFIX),
                "{}: package `{}` is published, so its name starts with `{NAME_PREFIX}` \
                 (its folder keeps the short name)",
                package.dir.display(),
                package.name()
            );
        }
    }
}

#[test]
fn every_path_dependency_names_the_version_it_is_published_with() {
    let workspace = workspace();
    let version = workspace["workspace"]["package"]["version"]
        .as_str()
        .expect("[workspace.package] version");
    let mut tables = vec![(
        "the workspace's [workspace.dependencies]".to_string(),
        workspace["workspace"]["dependencies"]
            .as_table()
            .expect("[workspace.dependencies]"),
    )];
    let packages = packages();
    for package in &packages {
        for (kind, table) in dependency_tables(&package.manifest) {
            tables.push((format!("{} [{kind}]", package.name()), table));
        }
    }
    let mut path_dependencies = 0;
    for (place, table) in tables {
        for (name, spec) in table.iter() {
            if spec.get("path").is_none() {
                continue;
            }
            // A test-only crate that is never published (`publish = false`,
            // used only as a dev-dependency, which packaging strips) has no
            // version to name.
            let unpublished = packages.iter().any(|p| {
                !p.published()
                    && spec.get("package").and_then(Item::as_str).unwrap_or(name) == p.name()
            });
            if unpublished {
                continue;
            }
            path_dependencies += 1;
            // crates.io resolves a published dependency by its version;
            // every crate here moves with the workspace's one version.
            assert_eq!(
                spec.get("version").and_then(Item::as_str),
                Some(version),
                "{place}: path dependency `{name}` must say `version = \"{version}\"`"
            );
        }
    }
    assert!(
        path_dependencies >= 4,
        "the workspace's own crates are path dependencies"
    );
}

#[test]
fn every_workspace_dependency_says_why_in_a_comment_above_it() {
    let workspace = workspace();
    let dependencies = workspace["workspace"]["dependencies"]
        .as_table()
        .expect("[workspace.dependencies]");
    for (name, _) in dependencies.iter() {
        let key = dependencies.key(name).expect("a listed key");
        let prefix = key
            .leaf_decor()
            .prefix()
            .and_then(|raw| raw.as_str())
            .unwrap_or("");
        let says_why = prefix.lines().any(|line| {
            let line = line.trim();
            line.starts_with('#') && line.trim_start_matches('#').trim().len() > 3
        });
        assert!(
            says_why,
            "[workspace.dependencies] `{name}`: the line above it is a comment saying why it is needed"
        );
    }
}

#[test]
fn every_dependency_comes_from_the_workspace_where_its_reason_is() {
    for package in packages() {
        for (kind, table) in dependency_tables(&package.manifest) {
            for (name, spec) in table.iter() {
                assert_eq!(
                    spec.get("workspace").and_then(Item::as_bool),
                    Some(true),
                    "{} [{kind}] `{name}`: write `{name}.workspace = true` and declare it, \
                     with its reason, in the workspace's [workspace.dependencies]",
                    package.name()
                );
            }
        }
    }
}

#[test]
fn every_package_inherits_the_workspace_metadata() {
    let workspace = workspace();
    for field in INHERITED {
        assert!(
            workspace["workspace"]["package"].get(field).is_some(),
            "[workspace.package] sets `{field}`"
        );
    }
    for package in packages() {
        for field in INHERITED {
            assert_eq!(
                package.manifest["package"]
                    .get(field)
                    .and_then(|value| value.get("workspace"))
                    .and_then(Item::as_bool),
                Some(true),
                "{}: write `{field}.workspace = true`",
                package.name()
            );
        }
    }
}

#[test]
fn every_published_package_has_a_description_and_a_readme_of_its_own() {
    for package in packages().into_iter().filter(Package::published) {
        let fields = &package.manifest["package"];
        let description = fields.get("description").and_then(Item::as_str);
        assert!(
            description.is_some_and(|text| !text.trim().is_empty()),
            "{}: a published package says what it is (`description`)",
            package.name()
        );
        let readme = fields
            .get("readme")
            .and_then(Item::as_str)
            .unwrap_or_else(|| panic!("{}: `readme` names its README", package.name()));
        let path = lexically_normal(&package.dir.join(readme));
        assert!(
            path.starts_with(&package.dir) && path.is_file(),
            "{}: its readme `{readme}` is a file inside {} (only those are packaged)",
            package.name(),
            package.dir.display()
        );
    }
}

#[test]
fn no_include_reaches_outside_its_crate() {
    // The macro names are built here, so this file's own text never matches.
    let macros = ["include_str", "include_bytes"].map(|name| format!("{name}!("));
    let mut includes = 0;
    for package in packages() {
        for file in rust_files(&package.dir) {
            let text = fs::read_to_string(&file).expect("a source file");
            for needle in &macros {
                for (at, _) in text.match_indices(needle.as_str()) {
                    includes += 1;
                    let argument = text[at + needle.len()..].trim_start();
                    let literal = argument
                        .strip_prefix('"')
                        .and_then(|rest| rest.split_once('"'))
                        .map(|(path, _)| path)
                        .unwrap_or_else(|| {
                            panic!(
                                "{}: `{needle}` takes a plain string literal here, so that \
                                 this check can see where it reaches",
                                file.display()
                            )
                        });
                    let target = lexically_normal(&file.parent().expect("a folder").join(literal));
                    // `cargo package` packs the crate's folder only: a file
                    // outside it is missing from the published sources.
                    assert!(
                        target.starts_with(&package.dir),
                        "{}: `{needle}\"{literal}\")` reaches outside {} (copy the file into \
                         the crate)",
                        file.display(),
                        package.dir.display()
                    );
                }
            }
        }
    }
    assert!(
        includes > 0,
        "the profiles and the demo's screens are included"
    );
}

/// Each of the demo's screens (built into the binary, so inside its crate)
/// is a byte-for-byte copy of the golden corpus capture the demo names in its
/// output; the corpus stays the source.
#[test]
fn the_demo_screens_are_copies_of_the_corpus_captures() {
    let demo = root().join("crates/cli/demo");
    let mut screens = 0;
    for entry in fs::read_dir(&demo).expect("crates/cli/demo") {
        let path = entry.expect("a folder entry").path();
        if path.extension().is_none_or(|ext| ext != "txt") {
            continue;
        }
        let case = path.file_stem().expect("a file name").to_string_lossy();
        let capture = root()
            .join("testdata/panes/claude")
            .join(&*case)
            .join("plain.txt");
        let copy = fs::read(&path).expect("a demo screen");
        let original = fs::read(&capture)
            .unwrap_or_else(|e| panic!("{} copies {}: {e}", path.display(), capture.display()));
        assert!(
            copy == original,
            "{} differs from {}: copy the capture again (`cp {} {}`)",
            path.display(),
            capture.display(),
            capture.display(),
            path.display()
        );
        screens += 1;
    }
    assert!(screens > 0, "the demo's screens are in {}", demo.display());
}

/// The crates that call the OS: ARCHITECTURE.md says the pure crates reach none of them.
/// (`getrandom` reads the OS's random source; proptest's `std` feature brings it, with `libc`
/// and `rustix`.)
const OS_CRATES: &[&str] = &[
    "rustix",
    "nix",
    "libc",
    "signal-hook",
    "getrandom",
    "bmb-probes",
];

/// The pure crates and the edges of their graph that must reach no OS crate (`cargo tree -e`):
/// `watchdog`'s whole graph, its dev-dependencies included, so that `cargo tree -p
/// bmb-watchdog` as issue 20 reads it lists none (its property tests live in
/// `crates/watchdog-properties`); `audit`'s and `classify`'s normal graph (classify's property
/// tests bring proptest as a dev-dependency).
const PURE_CRATES: [(&str, &str); 3] = [
    ("bmb-watchdog", "normal,dev,features"),
    ("bmb-audit", "normal,features"),
    ("bmb-classify", "normal,features"),
];

/// `bmb-ledger`'s features are its files (the journal, the findings log): a pure crate turns on
/// none of them.
const LEDGER_FEATURE: &str = "bmb-ledger feature ";

/// The OS crates among the packages of `cargo tree -e normal,features --prefix none` output, and
/// the features of `bmb-ledger` it turns on (`bmb-ledger feature "findings"`).
fn os_crates_in(tree: &str) -> Vec<String> {
    let mut found: Vec<String> = tree
        .lines()
        .filter_map(|line| {
            if line.starts_with(LEDGER_FEATURE) {
                return Some(line.trim().to_string());
            }
            line.split_whitespace()
                .next()
                .filter(|name| OS_CRATES.contains(name))
                .map(str::to_string)
        })
        .collect();
    found.sort();
    found.dedup();
    found
}

/// `watchdog`, `audit` and `classify` are pure (ARCHITECTURE.md): their dependency graph (see
/// [`PURE_CRATES`]: watchdog's with its dev-dependencies), with the features they ask for alone,
/// reaches no crate that calls the OS, nor `ledger`'s files.
#[test]
#[expect(
    clippy::disallowed_methods,
    reason = "a test of the workspace runs cargo itself, as a developer would; the product's subprocess rules are not its"
)]
fn the_pure_crates_reach_no_os_crate() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    for (package, edges) in PURE_CRATES {
        let out = std::process::Command::new(&cargo)
            .current_dir(root())
            .args([
                "tree", "--locked", "-e", edges, "--prefix", "none", "-p", package,
            ])
            .output()
            .expect("cargo tree runs");
        assert!(
            out.status.success(),
            "cargo tree -p {package}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let reached = os_crates_in(&String::from_utf8_lossy(&out.stdout));
        assert!(
            reached.is_empty(),
            "{package} reaches {reached:?} (`cargo tree -p {package} -e {edges}`): the pure crates call no OS"
        );
    }
}

/// The check above fails when a pure crate reaches an OS crate, directly or not.
#[test]
fn the_os_crate_check_finds_one_in_a_tree() {
    let tree = "bmb-watchdog v0.1.0 (/w/crates/watchdog)\nbmb-ledger v0.1.0\nbmb-probes v0.1.0\nrustix v1.1.6\nregex v1\nrustix v1.1.6 (*)\n";
    assert_eq!(os_crates_in(tree), ["bmb-probes", "rustix"]);
    assert!(os_crates_in("bmb-classify v0.1.0\nregex v1.13.2\nlibcx v1\n").is_empty());
    // A dev-dependency's (`-e dev`): proptest's random source.
    let dev = "bmb-watchdog v0.1.0\nproptest v1.9.0\nrand v0.9.2\ngetrandom v0.3.4\n";
    assert_eq!(os_crates_in(dev), ["getrandom"]);
    let features = "bmb-watchdog v0.1.0\nbmb-ledger v0.1.0\nbmb-ledger feature \"findings\"\nrustix feature \"fs\"\nserde feature \"std\"\n";
    assert_eq!(
        os_crates_in(features),
        ["bmb-ledger feature \"findings\"", "rustix"]
    );
}

/// The parts of `std` (and the clock calls of `std` and `jiff`) that reach the OS: a pure crate's
/// code names none of them.
const OS_APIS: &[&[&str]] = &[
    &["std", "fs"],
    &["std", "process"],
    &["std", "net"],
    &["std", "env"],
    &["std", "os"],
    &["std", "thread"],
    &["std", "io", "stdin"],
    &["std", "io", "stdout"],
    &["std", "io", "stderr"],
    &["SystemTime", "now"],
    &["Instant", "now"],
    &["Timestamp", "now"],
    &["Zoned", "now"],
    &["TimeZone", "system"],
];

/// The OS APIs one file's code names (its comments, strings and unit tests left out), each as
/// `std::fs`: every `std::…` path with its `{…}` groups expanded, and every `X::now`.
fn os_apis_in(text: &str) -> Vec<String> {
    let tokens = without_test_items(tokens(&code_only(text)));
    let mut found = BTreeSet::new();
    for at in 0..tokens.len() {
        if tokens.get(at + 1).map(String::as_str) != Some("::")
            || (at > 0 && tokens[at - 1] == "::")
        {
            continue;
        }
        let (paths, _) = expand_path(&tokens, at);
        for path in paths {
            for api in OS_APIS {
                if path.windows(api.len()).any(|window| window == *api) {
                    found.insert(api.join("::"));
                }
            }
        }
    }
    found.into_iter().collect()
}

/// `tokens` without the items under `#[cfg(test)]` (a `mod tests { … }`, a `use …;`): unit tests
/// may make files and read clocks.
fn without_test_items(tokens: Vec<String>) -> Vec<String> {
    const CFG_TEST: [&str; 7] = ["#", "[", "cfg", "(", "test", ")", "]"];
    let mut kept = Vec::with_capacity(tokens.len());
    let mut at = 0;
    while at < tokens.len() {
        let is_cfg_test = tokens.len() >= at + CFG_TEST.len()
            && tokens[at..at + CFG_TEST.len()]
                .iter()
                .zip(CFG_TEST)
                .all(|(token, want)| token == want);
        if !is_cfg_test {
            kept.push(tokens[at].clone());
            at += 1;
            continue;
        }
        // Skip the item: to its `;`, or to the `}` that closes its first `{`.
        at += CFG_TEST.len();
        let mut depth = 0usize;
        while at < tokens.len() {
            let token = tokens[at].as_str();
            at += 1;
            match token {
                "{" => depth += 1,
                "}" => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        break;
                    }
                }
                ";" if depth == 0 => break,
                _ => {}
            }
        }
    }
    kept
}

/// ARCHITECTURE.md: nothing in `watchdog`, `audit` or `classify` calls the OS, nor in the parts of
/// `ledger` they use (`session`, `escalation`). Their code names no file, process, socket,
/// environment or clock call; the time and the machine arrive through ports and arguments.
#[test]
fn the_pure_crates_code_names_no_os_call() {
    let mut files = Vec::new();
    for krate in ["watchdog", "audit", "classify"] {
        files.extend(rust_files(&root().join("crates").join(krate).join("src")));
    }
    for module in ["session.rs", "escalation.rs", "lib.rs"] {
        files.push(root().join("crates/ledger/src").join(module));
    }
    let mut wrong = Vec::new();
    let mut read = 0;
    for file in files {
        if file.file_name().is_some_and(|name| name == "tests.rs") {
            continue;
        }
        let text = fs::read_to_string(&file).expect("a source file");
        read += 1;
        for api in os_apis_in(&text) {
            wrong.push(format!("{} names `{api}`", file.display()));
        }
    }
    assert!(read > 30, "the pure crates' files were found ({read})");
    assert!(
        wrong.is_empty(),
        "a pure crate calls the OS: {} (take it through a port, or as an argument)",
        wrong.join("; ")
    );
}

/// The check above finds an OS call however it is imported, and not in a comment, a string or
/// the unit tests.
#[test]
fn the_os_call_check_finds_one_and_only_one() {
    let text = "use std::{collections::BTreeMap, fs::{self, File}};\n\
                use std::io::{self, Write};\n\
                fn f() { let _ = std::time::Instant::now(); let _ = jiff::Timestamp::now(); }\n\
                // std::process::Command\n\
                fn g() -> &'static str { \"std::env::var\" }\n\
                #[cfg(test)]\nmod tests { fn h() { std::env::var(\"X\"); } }\n\
                #[cfg(test)]\nuse std::thread;\n\
                fn after_the_tests() { std::process::exit(1) }";
    assert_eq!(
        os_apis_in(text),
        ["Instant::now", "Timestamp::now", "std::fs", "std::process"]
    );
    assert!(os_apis_in("use std::io::{self, Write}; use std::fmt; fn now() {}").is_empty());
}

/// The files a code map need not name: a folder's `mod.rs`, the crate's `lib.rs` and `main.rs`,
/// a module's `tests.rs`.
const SELF_EVIDENT: [&str; 4] = ["mod.rs", "lib.rs", "main.rs", "tests.rs"];

/// One crate's section of ARCHITECTURE.md's code map (`### `crates/watchdog``), to the next
/// heading.
fn code_map_section<'a>(architecture: &'a str, folder: &str) -> &'a str {
    let heading = format!("### `{folder}`");
    let or_as_a_folder = format!("### `{folder}/`");
    [&heading, &or_as_a_folder]
        .iter()
        .find_map(|heading| architecture.split(heading.as_str()).nth(1))
        .map(|rest| rest.split("\n### ").next().unwrap_or(rest))
        .map(|rest| rest.split("\n## ").next().unwrap_or(rest))
        .unwrap_or_else(|| panic!("ARCHITECTURE.md has no section `{heading}`"))
}

/// The files under `src/` (`watch/config.rs`) a crate's code-map section does not name. A file is
/// named by its path under `src/` (or that path's tail after a folder, `board/wire.rs`), or by its
/// bare name: anywhere in the section when no other file of the crate has that name, else in a
/// paragraph or list item that names its folder (`` `watch/` ``) and not the folder of a namesake
/// (a `settings.rs` said under `` `watch/` `` names `watch/settings.rs`, not `worker/settings.rs`).
fn unnamed_files(section: &str, files: &[String]) -> Vec<String> {
    let name_of = |file: &str| file.rsplit('/').next().unwrap_or(file).to_string();
    let folder_of = |file: &str| file.rsplit_once('/').map(|(folder, _)| folder.to_string());
    let chunks: Vec<&str> = section
        .split("\n\n")
        .flat_map(|paragraph| paragraph.split("\n- "))
        .collect();
    let mut missing = Vec::new();
    for file in files {
        let name = name_of(file);
        if SELF_EVIDENT.contains(&name.as_str()) {
            continue;
        }
        if section.contains(&format!("`{file}`")) || section.contains(&format!("/{file}`")) {
            continue;
        }
        let quoted = format!("`{name}`");
        let namesakes: Vec<Option<String>> = files
            .iter()
            .filter(|other| *other != file && name_of(other) == name)
            .map(|other| folder_of(other))
            .collect();
        let mentions = |chunk: &str, folder: &Option<String>| {
            folder
                .as_ref()
                .is_some_and(|folder| chunk.contains(&format!("`{folder}/`")))
        };
        let named = if namesakes.is_empty() {
            section.contains(&quoted)
        } else {
            let folder = folder_of(file);
            chunks.iter().any(|chunk| {
                chunk.contains(&quoted)
                    && (folder.is_none() || mentions(chunk, &folder))
                    && !namesakes.iter().any(|other| mentions(chunk, other))
            })
        };
        if !named {
            missing.push(file.clone());
        }
    }
    missing
}

/// The `.rs` files a crate's code-map section names that are not there: a bare name that no file
/// of the crate has, or a path that is no file's path (or its tail) in this crate nor, for a
/// cross-reference, in the workspace (`all`: every `.rs` file of every package, from the root);
/// and an entry of a drawn tree of `src` that is no folder or file of it.
fn stale_names(section: &str, files: &[String], all: &[String]) -> Vec<String> {
    let mut stale = BTreeSet::new();
    for quoted in section.split('`').skip(1).step_by(2) {
        let looks_like_a_file = quoted.ends_with(".rs")
            && quoted
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '/' || c == '.');
        if !looks_like_a_file {
            continue;
        }
        let exists = if quoted.contains('/') {
            let tail = format!("/{quoted}");
            files
                .iter()
                .any(|file| file == quoted || file.ends_with(&tail))
                || all.iter().any(|file| file.ends_with(&tail))
        } else {
            files
                .iter()
                .any(|file| file.rsplit('/').next() == Some(quoted))
        };
        if !exists {
            stale.insert(quoted.to_string());
        }
    }
    // A drawn tree of `src` (`├── session/   …`): each entry is a folder or a file there.
    for line in section.lines() {
        let Some((_, entry)) = line.split_once("├── ").or_else(|| line.split_once("└── "))
        else {
            continue;
        };
        let entry = entry.split_whitespace().next().unwrap_or_default();
        let exists = match entry.strip_suffix('/') {
            Some(folder) => files
                .iter()
                .any(|file| file.starts_with(&format!("{folder}/"))),
            None => files.iter().any(|file| file == entry),
        };
        if !exists {
            stale.insert(entry.to_string());
        }
    }
    stale.into_iter().collect()
}

/// Every package's source files (the libraries', the binary's, xtask's), by crate: its folder under the root
/// (`crates/cli`) and its files under `src/` (`watch/config.rs`).
fn sources_by_crate() -> Vec<(String, Vec<String>)> {
    let mut crates = Vec::new();
    for package in packages() {
        let src = package.dir.join("src");
        if !src.is_dir() {
            continue;
        }
        let folder = package
            .dir
            .strip_prefix(root())
            .expect("a member under the root")
            .to_string_lossy()
            .into_owned();
        let mut files: Vec<String> = rust_files(&src)
            .iter()
            .map(|file| {
                file.strip_prefix(&src)
                    .expect("under src")
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        files.sort();
        crates.push((folder, files));
    }
    crates
}

/// Every source file of a library or the binary is named in ARCHITECTURE.md's code map, in its
/// crate's own section (see [`unnamed_files`]), and every file the map names is there.
#[test]
fn every_source_file_is_in_the_code_map_and_every_file_it_names_exists() {
    let architecture =
        fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md reads");
    let crates = sources_by_crate();
    let all: Vec<String> = packages()
        .iter()
        .flat_map(|package| rust_files(&package.dir))
        .map(|file| {
            file.strip_prefix(root())
                .expect("under the root")
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert!(
        all.len() > 50,
        "the crates' files were found ({})",
        all.len()
    );
    let mut wrong = Vec::new();
    for (folder, files) in &crates {
        let section = code_map_section(&architecture, folder);
        for file in unnamed_files(section, files) {
            wrong.push(format!("does not name {folder}/src/{file}"));
        }
        for name in stale_names(section, files, &all) {
            wrong.push(format!(
                "names `{name}` in `{folder}`'s section, which is not there"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "ARCHITECTURE.md's code map {} (say what each file is for, in its crate's section)",
        wrong.join("; ")
    );
}

/// The checks above find a file the map leaves out, one it names only through a namesake in
/// another folder, and a name it keeps after the file went.
#[test]
fn the_code_map_check_finds_an_unnamed_file_and_a_stale_name() {
    let files: Vec<String> = [
        "lib.rs",
        "alert.rs",
        "watch/mod.rs",
        "watch/alert.rs",
        "watch/settings.rs",
        "worker/settings.rs",
        "watch/cycle/discover.rs",
        "board/wire.rs",
    ]
    .map(String::from)
    .to_vec();
    let section = "The binary.\n- `watch/`: `mod.rs`, `alert.rs` (its funnel), `settings.rs`, \
                   `watch/cycle/discover.rs`;\n- `alert.rs` (the command), and the board's \
                   `session/board/wire.rs` with `wire.rs`.\n\nSee `watch/socket_lock.rs`.";
    let all = vec!["crates/cli/src/watch/socket_lock.rs".to_string()];
    assert_eq!(unnamed_files(section, &files), ["worker/settings.rs"]);
    assert_eq!(
        stale_names(section, &files, &all),
        ["session/board/wire.rs"]
    );
    let named_everything = format!("{section}\n- `worker/`: `settings.rs`, `board/wire.rs`.");
    assert!(unnamed_files(&named_everything, &files).is_empty());
    assert!(stale_names("`alert.rs`, `watch/socket_lock.rs`", &files, &all).is_empty());
    assert_eq!(stale_names("`gone.rs`", &files, &all), ["gone.rs"]);
    let drawn = "```\nsrc\n├── watch/   the loop\n├── audit/   gone\n└── alert.rs\n```";
    assert_eq!(stale_names(drawn, &files, &all), ["audit/"]);
}

/// The `.rs` files under a package's folder.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(&dir).expect("a source folder") {
            let path = entry.expect("a folder entry").path();
            if path.is_dir() {
                // Generated trees, never sources (`target` when a package is built alone).
                if path
                    .file_name()
                    .is_some_and(|name| name != "target" && name != "node_modules")
                {
                    pending.push(path);
                }
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                files.push(path);
            }
        }
    }
    files
}

/// `a/b/../c` as `a/c`, without touching the file system.
fn lexically_normal(path: &Path) -> PathBuf {
    let mut normal = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                normal.pop();
            }
            Component::CurDir => {}
            other => normal.push(other),
        }
    }
    normal
}

/// Every module of every workspace crate, by its path inside its crate, and its file's text:
/// `src/lib.rs` (or `main.rs`) is the root (`[]`), `src/watch/mod.rs` is `["watch"]`,
/// `src/watch/config.rs` is `["watch", "config"]`.
fn crate_modules(src: &Path) -> Vec<(Vec<String>, String)> {
    let has_lib = src.join("lib.rs").is_file();
    let mut modules = Vec::new();
    for file in rust_files(src) {
        let under = file.strip_prefix(src).expect("under src");
        let mut module: Vec<String> = under
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let last = module.pop().expect("a file name");
        // The binary beside a library is a crate of its own that reaches the library by its name.
        if module.is_empty() && last == "main.rs" && has_lib {
            continue;
        }
        // `mod.rs` is its folder's module, `lib.rs`/`main.rs` at the top the crate's root.
        let is_root = module.is_empty() && (last == "lib.rs" || last == "main.rs");
        if last != "mod.rs" && !is_root {
            module.push(last.trim_end_matches(".rs").to_string());
        }
        let text = fs::read_to_string(&file).expect("a source file");
        modules.push((module, text));
    }
    modules
}

/// `text` with its comments, string literals and char literals blanked (a doc comment's
/// `crate::x` or a message's `super::` is no use of a module); lifetimes are kept.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r'
            && (next == Some('"') || next == Some('#'))
            && !chars
                .get(i.wrapping_sub(1))
                .is_some_and(|p| p.is_alphanumeric() || *p == '_')
        {
            // A raw string: r"…", r#"…"#, as many hashes as it opened with.
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= chars.len() {
                    break;
                }
                if chars[j] == '"' && (0..hashes).all(|k| chars.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            i = j;
            out.push_str("\"\"");
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{1b}'), not a lifetime ('a).
            let end = if next == Some('\\') {
                (i + 2..chars.len().min(i + 12)).find(|&j| chars[j] == '\'')
            } else if chars.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(end) => {
                    out.push_str("' '");
                    i = end + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// One token of code, as far as paths need: a word, `::`, or one other character.
fn tokens(code: &str) -> Vec<String> {
    let chars: Vec<char> = code.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            tokens.push(chars[start..i].iter().collect());
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            tokens.push("::".to_string());
            i += 2;
        } else {
            if !c.is_whitespace() {
                tokens.push(c.to_string());
            }
            i += 1;
        }
    }
    tokens
}

/// The paths a path expression starting at `tokens[at]` names, `{…}` groups expanded:
/// `super::{a, b::{C, D}}` is `super::a`, `super::b::C` and `super::b::D`. Returns them with
/// the index past the expression.
fn expand_path(tokens: &[String], mut at: usize) -> (Vec<Vec<String>>, usize) {
    let mut prefix = Vec::new();
    loop {
        match tokens.get(at).map(String::as_str) {
            Some("{") => {
                let mut paths = Vec::new();
                at += 1;
                loop {
                    match tokens.get(at).map(String::as_str) {
                        None => break,
                        Some("}") => {
                            at += 1;
                            break;
                        }
                        Some(",") => at += 1,
                        Some(_) => {
                            let (inner, past) = expand_path(tokens, at);
                            paths.extend(inner.into_iter().map(|path| {
                                let mut whole = prefix.clone();
                                whole.extend(path);
                                whole
                            }));
                            // A token the path grammar does not know (`as`, `<`): skip it.
                            at = if past == at { at + 1 } else { past };
                        }
                    }
                }
                return (paths, at);
            }
            Some(word) if word == "*" || word.chars().all(|c| c.is_alphanumeric() || c == '_') => {
                prefix.push(word.to_string());
                at += 1;
                if tokens.get(at).map(String::as_str) == Some("::") {
                    at += 1;
                } else {
                    return (vec![prefix], at);
                }
            }
            _ => {
                return (
                    if prefix.is_empty() {
                        vec![]
                    } else {
                        vec![prefix]
                    },
                    at,
                );
            }
        }
    }
}

/// One use of another module: from which module, to which, and in which file.
struct ModuleUse {
    from: Vec<String>,
    to: Vec<String>,
}

/// The uses of sibling modules in one crate: for every `crate::…`, `super::…` and `self::…`
/// path (and a bare `sibling::…` after a `use super::*`), resolved from the module it is
/// written in (an inline `mod tests { … }` included) and through the re-exports on its way
/// (`super::Target` where the parent has `pub use target::Target`), the two modules under their deepest
/// common parent that it crosses between. A module's use of its own ancestors or descendants
/// is no edge: a parent and its child are one subtree.
fn module_uses(files: &[(Vec<String>, String)]) -> Vec<ModuleUse> {
    let mut modules: BTreeSet<Vec<String>> = files.iter().map(|(m, _)| m.clone()).collect();
    let parsed: Vec<(Vec<String>, Vec<String>)> = files
        .iter()
        .map(|(module, text)| (module.clone(), tokens(&code_only(text))))
        .collect();
    // Inline modules are modules too (`mod tests {`).
    for (module, tokens) in &parsed {
        for (at, token) in tokens.iter().enumerate() {
            if token == "mod" && tokens.get(at + 2).map(String::as_str) == Some("{") {
                let mut inline = module.clone();
                inline.push(tokens[at + 1].clone());
                modules.insert(inline);
            }
        }
    }
    // Every path any module names, with the module it is written in, and what each module's
    // `use` lines bring in by name: a path through a parent's re-export (`super::Target` for
    // `session::target::Target`, `crate::Rule` for `rule::Rule`) is a use of the module that
    // defines it.
    let mut paths: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    let mut imports: BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    for (file_module, tokens) in &parsed {
        // Unit tests sit beside the code and may reach anything in their crate: a test module's
        // paths are no edge (`tests.rs`, or a `#[cfg(test)] mod … { … }`).
        if file_module.last().is_some_and(|name| name == "tests") {
            continue;
        }
        // The inline modules open at each point: (name, brace depth inside it, a test module).
        let mut inline: Vec<(String, usize, bool)> = Vec::new();
        let mut depth = 0usize;
        let mut globbed: Vec<Vec<String>> = Vec::new();
        let mut at = 0;
        while at < tokens.len() {
            let token = tokens[at].as_str();
            let here = || {
                let mut m = file_module.clone();
                m.extend(inline.iter().map(|(name, _, _)| name.clone()));
                m
            };
            let in_test = inline.iter().any(|(_, _, test)| *test);
            match token {
                "{" => {
                    depth += 1;
                    if at >= 2 && tokens[at - 2] == "mod" {
                        let attribute: Vec<&str> = tokens[at.saturating_sub(9)..at - 2]
                            .iter()
                            .map(String::as_str)
                            .collect();
                        let test = attribute == ["#", "[", "cfg", "(", "test", ")", "]"];
                        inline.push((tokens[at - 1].clone(), depth, test));
                    }
                }
                "}" => {
                    if inline.last().is_some_and(|(_, d, _)| *d == depth) {
                        inline.pop();
                    }
                    depth = depth.saturating_sub(1);
                }
                _ if in_test => {}
                "crate" | "super" | "self"
                    if tokens.get(at + 1).map(String::as_str) == Some("::")
                        && (at == 0 || tokens[at - 1] != "::") =>
                {
                    let (expanded, past) = expand_path(tokens, at);
                    for path in expanded {
                        let module = here();
                        let mut resolved = match path[0].as_str() {
                            "crate" => Vec::new(),
                            _ => module.clone(),
                        };
                        let mut rest = &path[..];
                        if rest[0] == "crate" || rest[0] == "self" {
                            rest = &rest[1..];
                        }
                        while rest.first().is_some_and(|s| s == "super") {
                            resolved.pop();
                            rest = &rest[1..];
                        }
                        resolved.extend(rest.iter().cloned());
                        if resolved.last().is_some_and(|s| s == "*") {
                            let mut parent = resolved.clone();
                            parent.pop();
                            globbed.push(parent);
                        } else if at > 0 && tokens[at - 1] == "use" {
                            let name = resolved.last().expect("a path has a segment").clone();
                            imports
                                .entry(module.clone())
                                .or_default()
                                .insert(name, resolved.clone());
                        }
                        paths.push((module, resolved));
                    }
                    at = past.max(at + 1);
                    continue;
                }
                _ if at > 0
                    && tokens[at - 1] == "use"
                    && tokens.get(at + 1).map(String::as_str) == Some("::")
                    && modules.contains(&[here(), vec![token.to_string()]].concat()) =>
                {
                    // `use child::{…}`: what a module brings in from its own child, by name.
                    let (expanded, past) = expand_path(tokens, at);
                    for path in expanded {
                        if path.last().is_some_and(|s| s != "*") {
                            let resolved = [here(), path].concat();
                            let name = resolved.last().expect("a path has a segment").clone();
                            imports.entry(here()).or_default().insert(name, resolved);
                        }
                    }
                    at = past.max(at + 1);
                    continue;
                }
                _ => {
                    // `sibling::…`, named through a glob of its parent.
                    let is_word = token.chars().all(|c| c.is_alphanumeric() || c == '_');
                    if is_word
                        && tokens.get(at + 1).map(String::as_str) == Some("::")
                        && (at == 0 || tokens[at - 1] != "::")
                    {
                        for parent in &globbed {
                            let mut target = parent.clone();
                            target.push(token.to_string());
                            if modules.contains(&target) {
                                paths.push((here(), target));
                            }
                        }
                    }
                }
            }
            at += 1;
        }
    }
    // A path to a name a module imported is a path to where that name comes from, through
    // as many re-exports as there are (bounded, so two modules importing each other's name
    // cannot loop).
    let through_imports = |mut path: Vec<String>| {
        for _ in 0..16 {
            let module_len = (0..=path.len())
                .rev()
                .find(|&len| modules.contains(&path[..len]))
                .unwrap_or(0);
            let Some(name) = path.get(module_len) else {
                break;
            };
            let Some(source) = imports.get(&path[..module_len]).and_then(|m| m.get(name)) else {
                break;
            };
            if source[..] == path[..=module_len] {
                break;
            }
            path = [source.clone(), path[module_len + 1..].to_vec()].concat();
        }
        path
    };
    let mut uses = Vec::new();
    for (from, to) in paths {
        let to = through_imports(to);
        let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
        if common >= from.len() || common >= to.len() {
            continue;
        }
        let sibling = to[..=common].to_vec();
        if modules.contains(&sibling) {
            uses.push(ModuleUse {
                from: from[..=common].to_vec(),
                to: sibling,
            });
        }
    }
    uses
}

/// The cycles among one crate's modules, each as `crate::a -> crate::b -> crate::a`: every
/// strongly connected set of sibling modules, shown as one cycle through all of it when there
/// is one, else named by its members.
fn module_cycles(crate_name: &str, files: &[(Vec<String>, String)]) -> Vec<String> {
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for edge in module_uses(files) {
        edges.entry(edge.from).or_default().insert(edge.to);
    }
    let reaches = |from: &Vec<String>, to: &Vec<String>| {
        let mut seen = BTreeSet::new();
        let mut pending = vec![from.clone()];
        while let Some(node) = pending.pop() {
            for next in edges.get(&node).into_iter().flatten() {
                if next == to {
                    return true;
                }
                if seen.insert(next.clone()) {
                    pending.push(next.clone());
                }
            }
        }
        false
    };
    let name = |module: &Vec<String>| {
        std::iter::once(crate_name.to_string())
            .chain(module.iter().cloned())
            .collect::<Vec<_>>()
            .join("::")
    };
    let nodes: BTreeSet<Vec<String>> = edges.keys().cloned().collect();
    let mut placed: BTreeSet<Vec<String>> = BTreeSet::new();
    let mut cycles = Vec::new();
    for node in &nodes {
        if placed.contains(node) || !reaches(node, node) {
            continue;
        }
        let members: Vec<Vec<String>> = nodes
            .iter()
            .filter(|other| *other == node || (reaches(node, other) && reaches(other, node)))
            .cloned()
            .collect();
        placed.extend(members.iter().cloned());
        let shown: Vec<String> = members.iter().map(name).collect();
        cycles.push(if members.len() == 2 {
            format!("{} <-> {}", shown[0], shown[1])
        } else {
            format!("{{{}}} reach each other", shown.join(", "))
        });
    }
    cycles
}

/// No workspace crate's modules form a cycle (ARCHITECTURE.md: dependencies run one way, inside
/// a crate as between crates): a module that needs its sibling's vocabulary, while that sibling
/// needs it back, is one module in two files, or a third module both should use.
#[test]
fn no_module_cycles_in_any_workspace_crate() {
    let mut cycles = Vec::new();
    let mut modules = 0;
    for package in packages() {
        let src = package.dir.join("src");
        if !src.is_dir() {
            continue;
        }
        let files = crate_modules(&src);
        modules += files.len();
        let crate_name = package
            .dir
            .file_name()
            .expect("a folder name")
            .to_string_lossy()
            .into_owned();
        cycles.extend(module_cycles(&crate_name, &files));
    }
    assert!(modules > 50, "the crates' modules were found ({modules})");
    assert!(
        cycles.is_empty(),
        "module cycles: {} (move what both need into a module of its own, or join them)",
        cycles.join("; ")
    );
}

/// The check above finds a cycle through `crate::`, `super::` and glob-imported paths, names it,
/// and takes neither a parent's use of its child, nor a child's of its parent, nor a unit test's
/// use, nor a path in a comment or a string, for one.
#[test]
fn the_module_cycle_check_finds_one_and_only_one() {
    let files = |list: &[(&str, &str)]| -> Vec<(Vec<String>, String)> {
        list.iter()
            .map(|(module, text)| {
                let module = module
                    .split("::")
                    .filter(|s| !s.is_empty())
                    .map(str::to_string);
                (module.collect(), text.to_string())
            })
            .collect()
    };
    let tree = files(&[
        ("", "mod a; mod b; mod c; use a::X; pub fn f() {}"),
        ("a", "use super::*;\nfn g() -> b::Y { crate::f(); todo!() }"),
        ("b", "use crate::{c::Z, a::{self, X}};"),
        (
            "c",
            "// use crate::a::X;\nfn h() { let _ = \"super::a\"; let _ = 'x'; }\nfn l<'a>(s: &'a str) -> &'a str { s }\n#[cfg(test)]\nmod tests { use crate::a::X; }",
        ),
        ("w", "mod p; mod q; use self::p::P;"),
        ("w::p", "use super::q::Q;"),
        (
            "w::q",
            "use super::super::w::p::P;\n#[cfg(test)]\nmod tests { use super::Q; }",
        ),
    ]);
    assert_eq!(
        module_cycles("k", &tree),
        ["k::a <-> k::b", "k::w::p <-> k::w::q"]
    );
    let three = files(&[
        ("x", "use crate::y::Y;"),
        ("y", "use crate::z::Z;"),
        ("z", "use crate::x::X;"),
    ]);
    assert_eq!(
        module_cycles("k", &three),
        ["{k::x, k::y, k::z} reach each other"]
    );
    // Through the re-exports of a parent (`super::Y`) and of the root (`crate::X`), however
    // many: the path names the module that defines the item.
    let reexported = files(&[
        ("", "mod a; mod d; pub use a::X;"),
        (
            "a",
            "mod b; mod c; pub use b::Y; pub(crate) use c::{Z, self as cc};",
        ),
        ("a::b", "use super::Z;"),
        ("a::c", "fn f() -> super::Y { todo!() }"),
        ("d", "pub use crate::a::Y as Why; fn g(_: crate::X) {}"),
    ]);
    assert_eq!(module_cycles("k", &reexported), ["k::a::b <-> k::a::c"]);
    let acyclic = files(&[
        ("", "mod a; mod b; use a::X; use b::Y;"),
        ("a", "use super::*; use crate::b::Y;"),
        (
            "b",
            "use super::Shared;\nmod tests { use super::*; use super::super::b::Y; }",
        ),
    ]);
    assert!(module_cycles("k", &acyclic).is_empty());
}

/// The habits are lints (ARCHITECTURE.md, Testing): every published package takes the
/// workspace's `[lints]`, and an unpublished one (testkit, xtask) repeats each of them but
/// `missing_docs`, with the same level, so none drifts from the set.
#[test]
fn every_package_holds_the_workspace_lints() {
    let workspace = workspace();
    let lints = workspace["workspace"]["lints"]
        .as_table()
        .expect("[workspace.lints]");
    assert_eq!(
        lints["rust"].get("missing_docs").and_then(Item::as_str),
        Some("warn"),
        "[workspace.lints.rust] missing_docs (clippy -D warnings makes it an error)"
    );
    for package in packages() {
        let own = package.manifest.get("lints");
        if package.published() {
            assert_eq!(
                own.and_then(|lints| lints.get("workspace"))
                    .and_then(Item::as_bool),
                Some(true),
                "{}: a published package writes `[lints] workspace = true`",
                package.name()
            );
            continue;
        }
        for (tool, table) in lints.iter() {
            let table = table.as_table().expect("a lint table");
            for (lint, level) in table.iter() {
                if lint == "missing_docs" {
                    continue;
                }
                let theirs = own
                    .and_then(|lints| lints.get(tool))
                    .and_then(|table| table.get(lint))
                    .and_then(Item::as_str);
                assert_eq!(
                    theirs,
                    level.as_str(),
                    "{}: [lints.{tool}] {lint} as the workspace sets it",
                    package.name()
                );
            }
        }
    }
}

/// What a `mod.rs` holds beyond declarations and re-exports (`mod x;`, `use …;`, their
/// attributes and visibility), each as the first words of the item.
fn mod_rs_items_beyond_declarations(text: &str) -> Vec<String> {
    let tokens = tokens(&code_only(text));
    let mut beyond = Vec::new();
    let mut at = 0;
    // `#![…]` and `#[…]`: skipped to their closing bracket.
    let skip_attribute = |at: &mut usize| {
        let mut depth = 0;
        while *at < tokens.len() {
            match tokens[*at].as_str() {
                "[" => depth += 1,
                "]" => {
                    depth -= 1;
                    if depth == 0 {
                        *at += 1;
                        return;
                    }
                }
                _ => {}
            }
            *at += 1;
        }
    };
    while at < tokens.len() {
        if tokens[at] == "#" {
            skip_attribute(&mut at);
            continue;
        }
        let start = at;
        if tokens[at] == "pub" {
            at += 1;
            if tokens.get(at).map(String::as_str) == Some("(") {
                while at < tokens.len() && tokens[at] != ")" {
                    at += 1;
                }
                at += 1;
            }
        }
        let keyword = tokens.get(at).map(String::as_str);
        let declaration = match keyword {
            Some("use") => true,
            // `mod x;`, not `mod x { … }`
            Some("mod") => tokens.get(at + 2).map(String::as_str) == Some(";"),
            _ => false,
        };
        if !declaration {
            let words: Vec<&str> = tokens[start..tokens.len().min(start + 3)]
                .iter()
                .map(String::as_str)
                .collect();
            beyond.push(words.join(" "));
        }
        // To the end of the item: its `;` at depth 0, or the `}` closing its body.
        let mut depth = 0usize;
        while at < tokens.len() {
            let token = tokens[at].as_str();
            at += 1;
            match token {
                "{" => depth += 1,
                "}" => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 && !declaration {
                        break;
                    }
                }
                ";" if depth == 0 => break,
                _ => {}
            }
        }
    }
    beyond
}

/// The `mod.rs` files still allowed to hold code, each with the issue that will split it.
const MOD_RS_EXCEPTIONS: [&str; 0] = [];

/// ARCHITECTURE.md: a folder's `mod.rs` holds declarations and re-exports, so a module's code is
/// in a file named for what it does; in the library crates and in `cli`'s command folders alike
/// (but for [`MOD_RS_EXCEPTIONS`]).
#[test]
fn every_mod_rs_holds_declarations_and_re_exports_only() {
    let mut wrong = Vec::new();
    let mut read = 0;
    let mut excepted = Vec::new();
    for package in packages() {
        if !package.published() {
            continue;
        }
        for file in rust_files(&package.dir.join("src")) {
            if file.file_name().is_none_or(|name| name != "mod.rs") {
                continue;
            }
            let relative = file
                .strip_prefix(root())
                .expect("under the root")
                .to_string_lossy()
                .into_owned();
            if MOD_RS_EXCEPTIONS.contains(&relative.as_str()) {
                excepted.push(relative);
                continue;
            }
            read += 1;
            let text = fs::read_to_string(&file).expect("a source file");
            for item in mod_rs_items_beyond_declarations(&text) {
                wrong.push(format!("{relative}: `{item} …`"));
            }
        }
    }
    assert!(read >= 9, "the crates' mod.rs files were found ({read})");
    assert_eq!(
        excepted.len(),
        MOD_RS_EXCEPTIONS.len(),
        "every exception names a mod.rs that is there (found {excepted:?}): drop the ones gone"
    );
    assert!(
        wrong.is_empty(),
        "a mod.rs holds more than declarations and re-exports: {} (move it into a file of its own)",
        wrong.join("; ")
    );
}

/// The check above passes declarations, re-exports and attributes, and finds an item.
#[test]
fn the_mod_rs_check_finds_an_item() {
    let declarations = "//! The tmux adapter.\n#![doc = \"x\"]\npub mod chain;\n#[cfg(test)]\nmod tests;\n\
                        pub(crate) use chain::{\n    a, b,\n};\npub use client::Tmux;\n";
    assert!(mod_rs_items_beyond_declarations(declarations).is_empty());
    let with_code = format!(
        "{declarations}/// A limit.\npub const CAP: u64 = 1;\nfn f() {{ let _ = {{ 1 }}; }}\nmod inline {{ }}\n"
    );
    assert_eq!(
        mod_rs_items_beyond_declarations(&with_code),
        ["pub const CAP", "fn f (", "mod inline {"]
    );
    // A command folder's: its flags, a narration macro and its body, beside its re-exports.
    let command = "mod run;\npub(crate) use run::run;\n#[derive(clap::Args)]\npub(crate) struct Args {\n    \
                   #[arg(long)]\n    pub(super) once: bool,\n}\nmacro_rules! say { ($($a:tt)*) => {{ }}; }\n\
                   pub(crate) fn run(args: Args) -> ExitCode { todo!() }\n";
    assert_eq!(
        mod_rs_items_beyond_declarations(command),
        ["pub ( crate", "macro_rules ! say", "pub ( crate"]
    );
}
