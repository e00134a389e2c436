//! A fake HTTP server on 127.0.0.1 for one test: a thread of the test's own,
//! on a port the kernel picked, that answers each connection's request with
//! what the test says (a failing Alertmanager, a redirecting proxy, a
//! hostile board endpoint).

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::Duration;

/// Serves on 127.0.0.1 until the test process ends; its port. Each
/// connection's request, as far as one read takes it (64 KiB at most, 5 s
/// at most), is given to `answer` as text, and the bytes `answer` returns
/// (a whole response: status line, headers, body) are written back before
/// the connection closes.
pub fn serve(mut answer: impl FnMut(&str) -> Vec<u8> + Send + 'static) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("address").port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
            let mut request = [0u8; 65536];
            let n = stream.read(&mut request).unwrap_or(0);
            let response = answer(&String::from_utf8_lossy(&request[..n]));
            let _ = stream.write_all(&response);
        }
    });
    port
}

/// A board endpoint (or any JSON API) that answers every request 200 with
/// `body` as `application/json`; its port.
pub fn serve_json(body: String) -> u16 {
    serve(move |_| {
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    })
}

/// `GET url` with `patience` as its whole timeout and no proxy (a test's
/// environment may name one): the body when it answered 200, else what
/// went wrong.
pub fn get(url: &str, patience: Duration) -> Result<String, String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(patience))
        .proxy(None)
        .build()
        .into();
    let mut response = agent.get(url).call().map_err(|e| e.to_string())?;
    response
        .body_mut()
        .read_to_string()
        .map_err(|e| e.to_string())
}
