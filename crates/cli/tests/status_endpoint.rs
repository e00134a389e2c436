//! `bmb-monitor status --endpoint` against a hostile endpoint: the real
//! binary reads a board whose every field carries what a terminal would obey
//! or be fooled by, and prints none of it raw.

const BIN: &str = env!("CARGO_BIN_EXE_bmb-monitor");

/// One board whose text fields carry an OSC 52 clipboard write, a clear
/// screen, a one-character CSI (U+009B), NEL (U+0085), DEL, a right-to-left
/// override, an isolate, a line separator, a zero-width space and a tag
/// character; served to every request on a free port.
fn hostile_endpoint() -> String {
    // Updated now: a live board, so its state and grounds are shown.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs();
    let board = r#"{"pid":1,"started":0,"updated":NOW,"interval_secs":3600,
        "cycles":{"count":0,"sum_seconds":0.0,"last_seconds":0.0,"buckets":[]},
        "targets":[{"target":"ag\u202eent\u001b]52;c;aGk=\u0007","host":"h\u2028x","session":"s",
          "cli":"cl\u009b2Ji","state":"Q\u200bT\u001b[2J","since":1,"polled":true,
          "nudges_used":0,"budget":5,"rule":"r\u2066x","evidence":"e\u007f\u0085\udb40\udc41",
          "error":null,"last_action":{"what":"nud\u001b[31mged","at":0,"rule":null,"evidence":null},
          "counts":{"nudges":0,"escalations":{},"budget_resets":0,"unrecognised":0}}],
        "hosts":[]}"#
        .replace("NOW", &now.to_string());
    format!("127.0.0.1:{}", bmb_testkit::http::serve_json(board))
}

/// What no terminal may get raw from a board.
fn unsafe_char(c: char) -> bool {
    c.is_control() && c != '\n'
        || matches!(
            c,
            '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{200b}'
                | '\u{e0000}'..='\u{e007f}'
        )
}

/// Found by a review (issue 19): the table made control characters `?`, but
/// let a right-to-left override, an isolate, a line separator and invisible
/// characters from a hostile endpoint through to the terminal.
#[test]
fn status_shows_every_field_of_a_hostile_board_with_nothing_a_terminal_obeys_or_reorders() {
    let addr = hostile_endpoint();
    let output = bmb_testkit::bin::command(BIN)
        .args(["status", "--endpoint", &addr])
        .output()
        .expect("bmb-monitor runs");
    let text = String::from_utf8(output.stdout).expect("UTF-8");
    let raw: Vec<String> = text
        .chars()
        .filter(|c| unsafe_char(*c))
        .map(|c| format!("U+{:04X}", u32::from(c)))
        .collect();
    assert!(raw.is_empty(), "{raw:?} reached the terminal raw:\n{text}");
    // The row is still there, each field shown with `?` where it was unsafe
    // (the host is the board's own, shown only for a remote target: in the JSON below).
    assert!(text.contains("ag?ent?]52;c;aGk=?"), "{text}");
    assert!(text.contains("Q?T?[2J"), "{text}");
    assert!(text.contains("nud?[31mged"), "{text}");
    assert!(text.contains("r?x: e???"), "{text}");

    let output = bmb_testkit::bin::command(BIN)
        .args(["status", "--json", "--endpoint", &addr])
        .output()
        .expect("bmb-monitor runs");
    let json = String::from_utf8(output.stdout).expect("UTF-8");
    assert!(
        !json.chars().any(unsafe_char) && !json.chars().any(|c| ('\u{7f}'..='\u{9f}').contains(&c)),
        "{json}"
    );
    let value: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    let row = &value["sources"][0]["board"]["targets"][0];
    assert_eq!(
        row["target"], "ag\u{202e}ent\u{1b}]52;c;aGk=\u{7}",
        "{value}"
    );
    assert_eq!(row["host"], "h\u{2028}x", "{value}");
    assert_eq!(row["evidence"], "e\u{7f}\u{85}\u{e0041}", "{value}");
}
