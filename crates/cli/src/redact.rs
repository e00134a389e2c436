//! Secrets never printed: a URL's userinfo (`http://admin:S3cr3t@host`, an
//! Alertmanager behind basic auth, or a board behind a proxy) is shown as
//! `http://admin:***@host` in every message, table and error line.

/// `text` with every URL's password (or a lone userinfo, which is a token)
/// replaced by `***`; the rest of the text, the user name and the host kept.
pub(crate) fn urls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (before, after) = rest.split_at(at + 3);
        out.push_str(before);
        let end = after
            .find(|c: char| matches!(c, '/' | '?' | '#' | '`' | '\'' | '"') || c.is_whitespace())
            .unwrap_or(after.len());
        let (authority, tail) = after.split_at(end);
        match authority.rfind('@') {
            Some(at) => {
                let (userinfo, host) = authority.split_at(at);
                match userinfo.split_once(':') {
                    Some((user, _)) => {
                        out.push_str(user);
                        out.push_str(":***");
                    }
                    None => out.push_str("***"),
                }
                out.push_str(host);
            }
            None => out.push_str(authority),
        }
        rest = tail;
    }
    out.push_str(rest);
    out
}

/// The secret part of `url`'s userinfo (its password, or the whole userinfo
/// when it has no `:`), to be kept out of a message that quotes it otherwise
/// (a client's error text that spells the URL its own way).
pub(crate) fn secret_of(url: &str) -> Option<String> {
    let after = url.split_once("://")?.1;
    let authority = after.split(['/', '?', '#']).next().unwrap_or("");
    let userinfo = &authority[..authority.rfind('@')?];
    let secret = userinfo.split_once(':').map_or(userinfo, |(_, pass)| pass);
    (!secret.is_empty()).then(|| secret.to_string())
}

/// `text` with `url`'s userinfo redacted wherever it appears, as a URL or not.
pub(crate) fn with_secret_of(url: &str, text: &str) -> String {
    let text = urls(text);
    match secret_of(url) {
        Some(secret) => text.replace(&secret, "***"),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_urls_password_or_token_is_never_shown_and_the_rest_is() {
        assert_eq!(
            urls("alertmanager http://admin:S3cr3tPW@127.0.0.1:9093/api/v2/alerts: refused"),
            "alertmanager http://admin:***@127.0.0.1:9093/api/v2/alerts: refused"
        );
        assert_eq!(urls("http://T0KEN@am:9093"), "http://***@am:9093");
        // A password holding `@` or `:` goes whole.
        assert_eq!(urls("`http://u:p@ss:w@h:1`"), "`http://u:***@h:1`");
        assert_eq!(
            urls("http://127.0.0.1:9093 and http://a:b@c"),
            "http://127.0.0.1:9093 and http://a:***@c"
        );
        assert_eq!(urls("no url here, a@b:c"), "no url here, a@b:c");
        assert_eq!(
            secret_of("http://admin:S3cr3t@h:1/x").as_deref(),
            Some("S3cr3t")
        );
        assert_eq!(secret_of("http://TOKEN@h:1").as_deref(), Some("TOKEN"));
        assert_eq!(secret_of("http://h:1/a@b"), None);
        assert_eq!(
            with_secret_of("http://admin:S3cr3t@h:1", "bad header S3cr3t in h:1"),
            "bad header *** in h:1"
        );
    }
}
