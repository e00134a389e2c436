//! `--metrics-listen ADDR`: `/metrics` (Prometheus text format) and
//! `/board.json` from a thread of their own.
//!
//! tiny_http reads each connection on its own pool thread, so a client that
//! connects and sends nothing holds up no one; this thread answers parsed
//! requests from the last published snapshot, and the poll never waits for it.

use std::net::SocketAddr;
use std::sync::Arc;

use tiny_http::{Header, Method, Response, Server};
use watchdog::Clock;

use super::metrics::{Slot, exposition};
use crate::clock::SystemClock;

/// Binds `addr` and answers from `slot` on a thread of its own, for the life
/// of the process; the address actually bound (port 0 picks one).
pub(super) fn listen(addr: &str, slot: Slot) -> Result<SocketAddr, String> {
    let server = Server::http(addr)
        .map_err(|err| format!("--metrics-listen {addr}: cannot listen: {err}"))?;
    let bound = server
        .server_addr()
        .to_ip()
        .ok_or_else(|| format!("--metrics-listen {addr}: not an IP address"))?;
    std::thread::Builder::new()
        .name("metrics".to_string())
        .spawn(move || {
            for request in server.incoming_requests() {
                answer(request, &slot);
            }
        })
        .map_err(|err| format!("--metrics-listen {addr}: cannot start its thread: {err}"))?;
    Ok(bound)
}

fn answer(request: tiny_http::Request, slot: &Slot) {
    // The lock is held for one pointer copy; encoding happens after it.
    let published = match slot.lock() {
        Ok(slot) => Arc::clone(&slot),
        Err(poisoned) => Arc::clone(&poisoned.into_inner()),
    };
    let path = request.url().split('?').next().unwrap_or("");
    let (status, content_type, body) = match (request.method(), path) {
        (Method::Get | Method::Head, "/metrics") => (
            200,
            prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
            exposition(published, SystemClock.now()),
        ),
        (Method::Get | Method::Head, "/board.json") => {
            (200, "application/json", published.json.clone())
        }
        (Method::Get | Method::Head, _) => (
            404,
            "text/plain; charset=utf-8",
            "not found: try /metrics or /board.json\n".to_string(),
        ),
        _ => (
            405,
            "text/plain; charset=utf-8",
            "only GET is served\n".to_string(),
        ),
    };
    let mut response = Response::from_string(body).with_status_code(status);
    if let Ok(header) = Header::from_bytes("Content-Type", content_type) {
        response = response.with_header(header);
    }
    // A client gone before its answer is its own loss, not the monitor's.
    let _ = request.respond(response);
}
