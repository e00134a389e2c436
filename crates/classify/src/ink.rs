//! What the terminal drew, cell by cell: each character of a `capture-pane
//! -e` line with the attributes it was drawn in. Only the attributes that
//! tell a CLI's own placeholder from a person's typing are kept: faint (SGR
//! 2, how every CLI seen dims its placeholder) and reverse video (SGR 7, the
//! cursor cell a CLI draws itself).

/// The attributes of one drawn character that matter here.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Ink {
    /// SGR 2: faint, the placeholder's ink.
    pub faint: bool,
    /// SGR 7: reverse video, a cursor cell drawn by the CLI.
    pub reverse: bool,
}

/// The characters of `raw` with their ink, starting from `ink` and leaving
/// in it the ink in force at the end of the line (tmux carries attributes
/// from one line to the next, emitting only changes). Escapes other than SGR
/// draw nothing; a carriage return starts the line over, as a terminal
/// would; other controls are dropped and a tab is a blank.
pub(crate) fn cells(raw: &str, ink: &mut Ink) -> Vec<(char, Ink)> {
    let mut out = Vec::new();
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.peek() {
                Some('[') => {
                    chars.next();
                    csi(&mut chars, ink);
                }
                // Not SGR: skipped whole, as the normaliser does.
                _ => crate::tail::skip_escape(&mut chars),
            },
            '\u{9b}' => csi(&mut chars, ink),
            '\r' => {
                if chars.peek().is_some() {
                    out.clear();
                }
            }
            '\t' => out.push((' ', *ink)),
            c if c.is_control() => {}
            c => out.push((c, *ink)),
        }
    }
    out
}

/// A CSI sequence after its introducer; an SGR (`…m`) updates `ink`.
fn csi(chars: &mut crate::tail::Chars<'_>, ink: &mut Ink) {
    let mut params = String::new();
    for c in chars.by_ref() {
        if ('@'..='~').contains(&c) {
            if c == 'm' {
                sgr(&params, ink);
            }
            return;
        }
        params.push(c);
    }
}

fn sgr(params: &str, ink: &mut Ink) {
    let mut codes = params
        .split([';', ':'])
        .map(|p| p.parse::<u32>().unwrap_or(0));
    while let Some(code) = codes.next() {
        match code {
            0 => *ink = Ink::default(),
            2 => ink.faint = true,
            // 22 ends both bold and faint.
            22 => ink.faint = false,
            7 => ink.reverse = true,
            27 => ink.reverse = false,
            // Extended colours carry their own parameters: `38;5;N`, `38;2;R;G;B`.
            38 | 48 | 58 => match codes.next() {
                Some(5) => {
                    codes.next();
                }
                Some(2) => {
                    codes.nth(2);
                }
                _ => {}
            },
            _ => {}
        }
    }
}

/// Whether `raw` carries an SGR sequence (so its ink can be read at all).
pub(crate) fn has_sgr(raw: &str) -> bool {
    raw.contains("\u{1b}[") || raw.contains('\u{9b}')
}

#[cfg(test)]
mod tests {
    use super::{Ink, cells};

    fn inked(raw: &str) -> String {
        cells(raw, &mut Ink::default())
            .into_iter()
            .map(|(c, ink)| match (ink.faint, ink.reverse) {
                (true, _) => c.to_ascii_lowercase(),
                (false, true) => '#',
                (false, false) => c.to_ascii_uppercase(),
            })
            .collect()
    }

    #[test]
    fn each_cell_carries_its_ink() {
        let cases = [
            ("plain", "PLAIN"),
            ("\u{1b}[2mdim\u{1b}[22mX", "dimX"),
            ("\u{1b}[7mR\u{1b}[0;2mesend", "#esend"),
            ("\u{1b}[38;5;2mA\u{1b}[38;2;1;2;3mB", "AB"),
            ("\u{1b}[2;38;5;244mab\u{1b}[0mC", "abC"),
            ("\u{1b}]8;;http://x\u{1b}\\link", "LINK"),
            ("old\rnew", "NEW"),
            ("\u{1b}[", ""),
        ];
        for (raw, expected) in cases {
            assert_eq!(inked(raw), expected, "raw {raw:?}");
        }
    }

    #[test]
    fn ink_carries_from_one_line_to_the_next() {
        let mut ink = Ink::default();
        cells("\u{1b}[2mfaint to the end", &mut ink);
        let next = cells("still", &mut ink);
        assert!(next.iter().all(|(_, ink)| ink.faint));
    }
}
