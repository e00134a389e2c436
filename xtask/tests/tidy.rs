//! Tidy checks, as ordinary tests so that `cargo test` alone keeps them true:
//! the rules that make the crates publishable (`cargo package` in `.ci/run`)
//! and the project's habits about dependencies, checked on every package of
//! the workspace.

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
const OS_CRATES: &[&str] = &["rustix", "nix", "libc", "signal-hook", "bmb-probes"];

/// The OS crates among the packages of `cargo tree --prefix none` output.
fn os_crates_in(tree: &str) -> Vec<String> {
    let mut found: Vec<String> = tree
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| OS_CRATES.contains(name))
        .map(str::to_string)
        .collect();
    found.sort();
    found.dedup();
    found
}

/// `watchdog`, `audit` and `classify` are pure (ARCHITECTURE.md): their normal dependency graph, with the
/// features they ask for alone, reaches no crate that calls the OS.
#[test]
#[expect(
    clippy::disallowed_methods,
    reason = "a test of the workspace runs cargo itself, as a developer would; the product's subprocess rules are not its"
)]
fn the_pure_crates_reach_no_os_crate() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    for package in ["bmb-watchdog", "bmb-audit", "bmb-classify"] {
        let out = std::process::Command::new(&cargo)
            .current_dir(root())
            .args([
                "tree", "--locked", "-e", "normal", "--prefix", "none", "-p", package,
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
            "{package} reaches {reached:?} (`cargo tree -p {package} -e normal`): the pure crates call no OS"
        );
    }
}

/// The check above fails when a pure crate reaches an OS crate, directly or not.
#[test]
fn the_os_crate_check_finds_one_in_a_tree() {
    let tree = "bmb-watchdog v0.1.0 (/w/crates/watchdog)\nbmb-ledger v0.1.0\nbmb-probes v0.1.0\nrustix v1.1.6\nregex v1\nrustix v1.1.6 (*)\n";
    assert_eq!(os_crates_in(tree), ["bmb-probes", "rustix"]);
    assert!(os_crates_in("bmb-classify v0.1.0\nregex v1.13.2\nlibcx v1\n").is_empty());
}

/// Every source file of a library or the binary is named in ARCHITECTURE.md's code map, in its
/// crate's own section: by its path under `src/` (`audit/cite.rs`) or by its name. A module's
/// `mod.rs`, `lib.rs`, `main.rs` and `tests.rs` are the crate's or their folder's and need no
/// line of their own.
#[test]
fn every_source_file_is_in_the_code_map() {
    let architecture =
        fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md reads");
    let mut missing = Vec::new();
    for package in packages() {
        let src = package.dir.join("src");
        if !src.is_dir() || package.name() == "xtask" {
            continue;
        }
        let folder = package
            .dir
            .strip_prefix(root())
            .expect("a member under the root")
            .to_string_lossy()
            .into_owned();
        let heading = format!("### `{folder}`");
        let section = architecture
            .split(&heading)
            .nth(1)
            .map(|rest| rest.split("\n### ").next().unwrap_or(rest))
            .unwrap_or_else(|| panic!("ARCHITECTURE.md has no section `{heading}`"));
        for file in rust_files(&src) {
            let name = file.file_name().expect("a file name").to_string_lossy();
            if ["mod.rs", "lib.rs", "main.rs", "tests.rs"].contains(&name.as_ref()) {
                continue;
            }
            let under_src = file
                .strip_prefix(&src)
                .expect("under src")
                .to_string_lossy();
            if !section.contains(&format!("`{under_src}`"))
                && !section.contains(&format!("`{name}`"))
                && !section.contains(&format!("/{under_src}`"))
            {
                missing.push(format!("{folder}/src/{under_src}"));
            }
        }
    }
    missing.sort();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md's code map does not name {} (say what each is for, in its crate's section)",
        missing.join(", ")
    );
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
