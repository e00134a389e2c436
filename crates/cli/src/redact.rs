//! Secrets never printed: a URL's userinfo (`http://admin:S3cr3t@host`, an
//! Alertmanager behind basic auth, or a board behind a proxy) is shown as
//! `http://admin:***@host` in every message, table and error line, and
//! whatever an answer from there echoes of it (the password, as written or
//! percent-decoded, and the `Authorization: Basic` header's base64 of
//! `user:password`) is shown as `***`.

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

/// Every spelling of `url`'s secret that a message could quote: the
/// secret as the URL writes it and percent-decoded, and the base64 the
/// client sends of the userinfo (`Authorization: Basic …`, padded or not,
/// of the userinfo as written and decoded). Longest first, so one that
/// holds another is replaced whole.
pub(crate) fn secrets_of(url: &str) -> Vec<String> {
    let Some(secret) = secret_of(url) else {
        return Vec::new();
    };
    let after = url.split_once("://").map_or("", |(_, after)| after);
    let authority = after.split(['/', '?', '#']).next().unwrap_or("");
    let userinfo = &authority[..authority.rfind('@').unwrap_or(0)];
    let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
    let decoded = format!("{}:{}", percent_decoded(user), percent_decoded(password));
    let mut all = vec![percent_decoded(&secret), secret];
    for basic in [format!("{user}:{password}"), decoded] {
        let encoded = base64(basic.as_bytes());
        all.push(encoded.trim_end_matches('=').to_string());
        all.push(encoded);
    }
    all.retain(|s| !s.is_empty());
    all.sort_by_key(|s| std::cmp::Reverse(s.len()));
    all.dedup();
    all
}

/// `text` with `url`'s userinfo redacted wherever it appears, as a URL or
/// not, in every spelling of [`secrets_of`].
pub(crate) fn with_secret_of(url: &str, text: &str) -> String {
    let mut text = urls(text);
    for secret in secrets_of(url) {
        text = text.replace(&secret, "***");
    }
    text
}

/// `%XX` escapes decoded (what a client sends for a URL's userinfo); an
/// escape that is not one, or bytes that are not UTF-8, kept as written.
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_string())
}

/// Standard base64 with padding (RFC 4648 §4), as Basic auth sends it.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
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

    #[test]
    fn an_echoed_basic_header_or_decoded_password_is_redacted_too() {
        assert_eq!(base64(b"admin:S3cr3tPW"), "YWRtaW46UzNjcjN0UFc=");
        assert_eq!(base64(b"ab"), "YWI=");
        assert_eq!(base64(b"abc"), "YWJj");
        assert_eq!(base64(b"a"), "YQ==");
        assert_eq!(
            with_secret_of(
                "http://admin:S3cr3tPW@h:1",
                "401: got `Authorization: Basic YWRtaW46UzNjcjN0UFc=`, and YWRtaW46UzNjcjN0UFc"
            ),
            "401: got `Authorization: Basic ***`, and ***"
        );
        // A password the URL percent-encodes, echoed as the client sent it.
        let url = "http://admin:p%40ss@h:1";
        assert_eq!(
            with_secret_of(url, &format!("pass p@ss, Basic {}", base64(b"admin:p@ss"))),
            "pass ***, Basic ***"
        );
        assert_eq!(
            with_secret_of("http://h:1", "Basic YWRtaW4="),
            "Basic YWRtaW4="
        );
    }
}
