//! A webhook receiver on 127.0.0.1, as Alertmanager's `webhook_configs`
//! posts to it: each POST's JSON body is kept (one notification each) and
//! answered 200. A thread of the test's own, on a port the kernel picked.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub struct Webhook {
    port: u16,
    received: Arc<Mutex<Vec<serde_json::Value>>>,
}

impl Default for Webhook {
    fn default() -> Self {
        Webhook::start()
    }
}

impl Webhook {
    pub fn start() -> Webhook {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the webhook");
        let port = listener.local_addr().expect("address").port();
        let received = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&received);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let mut reader = BufReader::new(stream);
                let mut length = 0usize;
                let mut line = String::new();
                loop {
                    line.clear();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        break;
                    }
                    let header = line.trim_end();
                    if header.is_empty() {
                        break;
                    }
                    if let Some((name, value)) = header.split_once(':')
                        && name.eq_ignore_ascii_case("content-length")
                    {
                        length = value.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0u8; length];
                if reader.read_exact(&mut body).is_ok()
                    && let Ok(value) = serde_json::from_slice::<serde_json::Value>(&body)
                {
                    kept.lock().unwrap_or_else(|e| e.into_inner()).push(value);
                }
                let mut stream = reader.into_inner();
                let _ = stream.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                );
            }
        });
        Webhook { port, received }
    }

    /// Its URL, for a receiver's `webhook_configs`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/bmb", self.port)
    }

    /// Every notification so far (Alertmanager's webhook payload).
    pub fn notifications(&self) -> Vec<serde_json::Value> {
        self.received
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The notifications holding an alert named `name`, as `(status of the
    /// notification, that alert's status)` pairs.
    pub fn about(&self, name: &str) -> Vec<(String, String)> {
        let mut found = Vec::new();
        for notification in self.notifications() {
            let status = notification["status"].as_str().unwrap_or("").to_string();
            for alert in notification["alerts"].as_array().into_iter().flatten() {
                if alert["labels"]["alertname"] == name {
                    found.push((
                        status.clone(),
                        alert["status"].as_str().unwrap_or("").to_string(),
                    ));
                }
            }
        }
        found
    }
}
