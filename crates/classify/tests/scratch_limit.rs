#[test]
fn survey() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/panes");
    for agent in ["claude", "codex"] {
        for case in std::fs::read_dir(root.join(agent)).unwrap() {
            let case = case.unwrap().path();
            let name = case.file_name().unwrap().to_string_lossy().to_string();
            for file in ["ansi.txt"] {
                let Ok(bytes) = std::fs::read(case.join(file)) else {
                    continue;
                };
                let pane = String::from_utf8_lossy(&bytes);
                let v = bmb_classify::classify(&pane, bmb_classify::Work::parse("3"));
                if v.usage_limit.is_some() || name.contains("limit") {
                    println!(
                        "{agent}/{name} {:?} safe={} {:?}",
                        v.state,
                        v.typing_safe(),
                        v.usage_limit
                    );
                }
            }
        }
    }
}
