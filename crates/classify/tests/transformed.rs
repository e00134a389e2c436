//! Real captures transformed the way real use changes them (a pane under
//! 80 columns, a draft typed in the box, a notice in the footer row), each a
//! misreading an adversarial review found: `testdata/transformed/<case>.txt`
//! with `<case>.how` saying the expected state (`expect:`) and how it was made.

use std::path::Path;

use bmb_classify as classify;
use classify::{State, Work};

#[test]
fn every_transformed_capture_classifies_to_its_expected_state() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/transformed");
    let mut checked = 0;
    let mut wrong = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("testdata/transformed") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "txt") {
            continue;
        }
        let how = std::fs::read_to_string(path.with_extension("how")).expect("its .how file");
        let expect = how
            .lines()
            .find_map(|l| l.strip_prefix("expect: "))
            .and_then(|word| State::from_word(word.trim()))
            .unwrap_or_else(|| panic!("{}: no `expect:` state", path.display()));
        let bytes = std::fs::read(&path).expect("capture");
        let verdict = classify::classify(&String::from_utf8_lossy(&bytes), Work::Unknown);
        checked += 1;
        if verdict.state != expect {
            wrong.push(format!(
                "{}: expected {expect}, got {} by {} on {:?}",
                path.file_name().unwrap().to_string_lossy(),
                verdict.state,
                verdict.rule,
                verdict.evidence.map(|e| e.text)
            ));
        }
    }
    assert!(
        checked >= 12,
        "only {checked} cases found in {}",
        dir.display()
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
