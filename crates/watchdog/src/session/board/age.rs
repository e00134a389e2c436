//! How a board states a duration for a person, in the table `status` prints
//! and in the reasons a reading gives: one spelling for both.

/// A duration as a person reads it on a board: `45s`, `3m05s`, `2h03m`, `4d02h`.
pub fn age(seconds: i64) -> String {
    let s = seconds.max(0);
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        3600..86400 => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
        _ => format!("{}d{:02}h", s / 86400, s % 86400 / 3600),
    }
}

#[cfg(test)]
mod tests {
    use super::age;

    #[test]
    fn each_unit_carries_the_next_smaller_one_and_a_negative_span_is_none() {
        assert_eq!(age(-5), "0s");
        assert_eq!(age(45), "45s");
        assert_eq!(age(185), "3m05s");
        assert_eq!(age(2 * 3600 + 3 * 60 + 59), "2h03m");
        assert_eq!(age(4 * 86400 + 2 * 3600), "4d02h");
    }
}
