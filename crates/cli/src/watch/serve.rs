//! `--metrics-listen ADDR`: `/metrics` (Prometheus text format) and
//! `/board.json`, from threads of their own and within fixed bounds.
//!
//! One thread accepts and hands each connection to [`WORKERS`] threads
//! through a queue of [`QUEUED`]; a connection beyond them is answered 503
//! and closed at once, so a flood of idle clients costs the monitor at most
//! `WORKERS + QUEUED` descriptors and no thread (left in the kernel's backlog
//! instead, they would fill it and a scrape would wait behind every one).
//! A worker reads one request head of at most [`HEAD_LIMIT`] bytes within
//! [`READ_DEADLINE`], writes its answer within [`WRITE_DEADLINE`] and closes
//! the connection. An accept error (out of descriptors, a connection reset
//! before it was taken) is said once and the loop goes on after a pause.
//! Answers come from the last published snapshot; the poll never waits for
//! this side.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use watchdog::Clock;

use super::metrics::{Slot, exposition};
use crate::clock::SystemClock;
use crate::output::SaidOnce;

/// Connections read and answered at once.
const WORKERS: usize = 4;
/// Accepted connections waiting for a worker; one more is refused at once.
const QUEUED: usize = 4;
/// The request line and headers together; a longer head is answered 431.
const HEAD_LIMIT: usize = 8 * 1024;
/// For the whole request head, from the moment a worker takes the connection.
const READ_DEADLINE: Duration = Duration::from_secs(2);
/// For the whole answer.
const WRITE_DEADLINE: Duration = Duration::from_secs(2);
/// After an accept error, so that one that persists (no descriptor left)
/// does not spin.
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

/// Binds `addr` and answers from `slot` on threads of their own, for the life
/// of the process; the address actually bound (port 0 picks one).
pub(super) fn listen(addr: &str, slot: Slot) -> Result<SocketAddr, String> {
    let listener = TcpListener::bind(addr)
        .map_err(|err| format!("--metrics-listen {addr}: cannot listen: {err}"))?;
    let bound = listener
        .local_addr()
        .map_err(|err| format!("--metrics-listen {addr}: cannot listen: {err}"))?;
    let (queue, taken) = std::sync::mpsc::sync_channel::<TcpStream>(QUEUED);
    let taken = Arc::new(Mutex::new(taken));
    let cannot_start =
        |err: std::io::Error| format!("--metrics-listen {addr}: cannot start its threads: {err}");
    for i in 0..WORKERS {
        let (taken, slot) = (Arc::clone(&taken), Arc::clone(&slot));
        std::thread::Builder::new()
            .name(format!("metrics-{i}"))
            .spawn(move || work(&taken, &slot))
            .map_err(cannot_start)?;
    }
    std::thread::Builder::new()
        .name("metrics".to_string())
        .spawn(move || accept(&listener, &queue))
        .map_err(cannot_start)?;
    Ok(bound)
}

fn accept(listener: &TcpListener, queue: &SyncSender<TcpStream>) {
    let hand = |stream| match queue.try_send(stream) {
        Ok(()) => {}
        Err(TrySendError::Full(stream) | TrySendError::Disconnected(stream)) => refuse(stream),
    };
    accept_all(listener.incoming(), hand, |line| crate::output::say(line));
}

/// Hands every connection `incoming` yields to `hand`; an error there is
/// told (once until an accept succeeds again) and waited out, never the end.
fn accept_all(
    incoming: impl Iterator<Item = std::io::Result<TcpStream>>,
    mut hand: impl FnMut(TcpStream),
    mut tell: impl FnMut(&str),
) {
    let mut said = SaidOnce::default();
    for accepted in incoming {
        match accepted {
            Ok(stream) => {
                said.clear(&"accept");
                hand(stream);
            }
            Err(err) if err.kind() == ErrorKind::Interrupted => {}
            Err(err) => {
                let line = format!(
                    "bmb-monitor: watch: metrics: cannot accept a connection: {err} (trying again)"
                );
                if said.is_news("accept", &line) {
                    tell(&line);
                }
                std::thread::sleep(ACCEPT_PAUSE);
            }
        }
    }
}

/// Every worker is busy and the queue is full: a 503 the client can read
/// without our waiting for it (a fresh socket's send buffer takes it whole,
/// and a non-blocking write gives up rather than wait).
fn refuse(stream: TcpStream) {
    let _ = stream.set_nonblocking(true);
    let answer = response(
        &Answer {
            status: 503,
            content_type: TEXT,
            body: "busy: try again\n".to_string(),
        },
        false,
        false,
    );
    let _ = (&stream).write(&answer);
    let _ = stream.shutdown(Shutdown::Write);
}

fn work(taken: &Mutex<Receiver<TcpStream>>, slot: &Slot) {
    loop {
        // The lock is held while waiting, so one worker waits and the others
        // wait for the lock; a poisoned lock still holds a good receiver.
        let stream = match taken.lock() {
            Ok(receiver) => receiver.recv(),
            Err(poisoned) => poisoned.into_inner().recv(),
        };
        let Ok(stream) = stream else { return };
        // A bug in one answer costs that connection, not the listener.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| serve(stream, slot)));
    }
}

fn serve(mut stream: TcpStream, slot: &Slot) {
    let (answer, head_only, http10) = match read_head(&mut stream, Instant::now() + READ_DEADLINE) {
        Ok(request) => (
            route(&request, slot),
            request.method == Method::Head,
            request.http10,
        ),
        Err(Refusal::Gone) => return,
        Err(refusal) => (refusal.answer(), false, false),
    };
    let bytes = response(&answer, head_only, http10);
    // A client gone before its answer is its own loss, not the monitor's.
    let _ = write_all_by(&mut stream, &bytes, Instant::now() + WRITE_DEADLINE);
    let _ = stream.shutdown(Shutdown::Write);
}

#[derive(Debug, PartialEq, Eq)]
enum Method {
    Get,
    Head,
    Other,
}

/// What the listener needs of a request head.
#[derive(Debug, PartialEq, Eq)]
struct Request {
    method: Method,
    /// Without its query string.
    path: String,
    http10: bool,
}

/// Why a connection gets no routed answer.
#[derive(Debug, PartialEq, Eq)]
enum Refusal {
    /// Closed or failed before a whole head: nobody to answer.
    Gone,
    TimedOut,
    TooLarge,
    Malformed,
}

impl Refusal {
    fn answer(&self) -> Answer {
        let (status, body) = match self {
            Refusal::Gone | Refusal::Malformed => (400, "bad request\n"),
            Refusal::TimedOut => (408, "the request head took too long\n"),
            Refusal::TooLarge => (431, "the request head is too large\n"),
        };
        Answer {
            status,
            content_type: TEXT,
            body: body.to_string(),
        }
    }
}

/// What `buf` holds so far: a whole head, the start of one, or not HTTP.
#[derive(Debug, PartialEq, Eq)]
enum Head {
    Complete(Request),
    Partial,
    Malformed,
}

fn parse_head(buf: &[u8]) -> Head {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut parsed = httparse::Request::new(&mut headers);
    match parsed.parse(buf) {
        Ok(httparse::Status::Complete(_)) => {
            let method = match parsed.method {
                Some("GET") => Method::Get,
                Some("HEAD") => Method::Head,
                _ => Method::Other,
            };
            let target = parsed.path.unwrap_or("");
            let path = target.split('?').next().unwrap_or("").to_string();
            Head::Complete(Request {
                method,
                path,
                http10: parsed.version == Some(0),
            })
        }
        Ok(httparse::Status::Partial) => Head::Partial,
        Err(_) => Head::Malformed,
    }
}

/// Reads one request head from `stream` by `deadline`, at most
/// [`HEAD_LIMIT`] bytes of it.
fn read_head(stream: &mut TcpStream, deadline: Instant) -> Result<Request, Refusal> {
    let mut buf = vec![0u8; HEAD_LIMIT];
    let mut len = 0;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Refusal::TimedOut);
        }
        stream
            .set_read_timeout(Some(left))
            .map_err(|_| Refusal::Gone)?;
        match stream.read(&mut buf[len..]) {
            Ok(0) => return Err(Refusal::Gone),
            Ok(n) => len += n,
            Err(err) if err.kind() == ErrorKind::Interrupted => continue,
            Err(err) if matches!(err.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Err(Refusal::TimedOut);
            }
            Err(_) => return Err(Refusal::Gone),
        }
        match parse_head(&buf[..len]) {
            Head::Complete(request) => return Ok(request),
            Head::Malformed => return Err(Refusal::Malformed),
            Head::Partial if len == HEAD_LIMIT => return Err(Refusal::TooLarge),
            Head::Partial => {}
        }
    }
}

fn write_all_by(
    stream: &mut TcpStream,
    mut bytes: &[u8],
    deadline: Instant,
) -> std::io::Result<()> {
    while !bytes.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ErrorKind::TimedOut.into());
        }
        stream.set_write_timeout(Some(left))?;
        match stream.write(bytes) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(err) if err.kind() == ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
    Ok(())
}

const TEXT: &str = "text/plain; charset=utf-8";

struct Answer {
    status: u16,
    content_type: &'static str,
    body: String,
}

fn route(request: &Request, slot: &Slot) -> Answer {
    if request.method == Method::Other {
        return Answer {
            status: 405,
            content_type: TEXT,
            body: "only GET is served\n".to_string(),
        };
    }
    // The lock is held for one pointer copy; encoding happens after it.
    let published = match slot.lock() {
        Ok(slot) => Arc::clone(&slot),
        Err(poisoned) => Arc::clone(&poisoned.into_inner()),
    };
    match request.path.as_str() {
        "/metrics" => Answer {
            status: 200,
            content_type: prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
            body: exposition(published, SystemClock.now()),
        },
        "/board.json" => Answer {
            status: 200,
            content_type: "application/json",
            body: published.json.clone(),
        },
        _ => Answer {
            status: 404,
            content_type: TEXT,
            body: "not found: try /metrics or /board.json\n".to_string(),
        },
    }
}

/// The whole answer, head and (unless `head_only`) body, one per connection.
fn response(answer: &Answer, head_only: bool, http10: bool) -> Vec<u8> {
    let reason = match answer.status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "",
    };
    let version = if http10 { "HTTP/1.0" } else { "HTTP/1.1" };
    let mut head = format!(
        "{version} {} {reason}\r\nDate: {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n",
        answer.status,
        httpdate::fmt_http_date(SystemTime::now()),
        answer.content_type,
        answer.body.len(),
    );
    if answer.status == 405 {
        head.push_str("Allow: GET, HEAD\r\n");
    }
    if answer.status == 503 {
        head.push_str("Retry-After: 1\r\n");
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    if !head_only {
        bytes.extend_from_slice(answer.body.as_bytes());
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(head: &str, expected: Head) {
        assert_eq!(parse_head(head.as_bytes()), expected, "{head:?}");
    }

    fn request(method: Method, path: &str, http10: bool) -> Head {
        Head::Complete(Request {
            method,
            path: path.to_string(),
            http10,
        })
    }

    #[test]
    fn a_head_is_parsed_into_method_path_without_query_and_version() {
        check(
            "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
            request(Method::Get, "/metrics", false),
        );
        check(
            "HEAD /board.json?x=1 HTTP/1.0\r\n\r\n",
            request(Method::Head, "/board.json", true),
        );
        check(
            "POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
            request(Method::Other, "/metrics", false),
        );
        check("GET /metrics HTTP/1.1\r\nHo", Head::Partial);
        check("GET /AAAAAAAA", Head::Partial);
        check("\u{1}\u{2} nonsense\r\n\r\n", Head::Malformed);
    }

    /// A connected pair on 127.0.0.1: (client, server side).
    fn pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let client = TcpStream::connect(listener.local_addr().expect("addr")).expect("connect");
        let (server, _) = listener.accept().expect("accept");
        (client, server)
    }

    #[test]
    fn a_head_beyond_the_cap_is_refused_after_reading_only_the_cap() {
        let (mut client, mut server) = pair();
        let line = format!("GET /{} HTTP/1.1\r\n\r\n", "A".repeat(HEAD_LIMIT));
        client.write_all(line.as_bytes()).expect("write");
        let far = Instant::now() + Duration::from_secs(600);
        assert_eq!(read_head(&mut server, far), Err(Refusal::TooLarge));
        // The rest of the line is still unread: the cap is all it took.
        let mut rest = Vec::new();
        drop(client);
        server.read_to_end(&mut rest).expect("the rest");
        assert_eq!(rest.len(), line.len() - HEAD_LIMIT);
    }

    #[test]
    fn a_head_just_under_the_cap_is_read_whole() {
        let (mut client, mut server) = pair();
        let fixed = "GET /metrics? HTTP/1.1\r\n\r\n".len();
        let line = format!(
            "GET /metrics?{} HTTP/1.1\r\n\r\n",
            "a".repeat(HEAD_LIMIT - fixed)
        );
        assert_eq!(line.len(), HEAD_LIMIT);
        client.write_all(line.as_bytes()).expect("write");
        let far = Instant::now() + Duration::from_secs(600);
        assert_eq!(
            read_head(&mut server, far).map(|r| r.path),
            Ok("/metrics".to_string())
        );
    }

    #[test]
    fn a_silent_client_is_given_up_at_the_deadline_and_a_closed_one_at_once() {
        let (_silent, mut server) = pair();
        let already = Instant::now();
        assert_eq!(read_head(&mut server, already), Err(Refusal::TimedOut));
        let soon = Instant::now() + Duration::from_millis(50);
        assert_eq!(read_head(&mut server, soon), Err(Refusal::TimedOut));
        let (mut half, mut server) = pair();
        half.write_all(b"GET /metrics HTTP/1.1\r\nHo")
            .expect("write");
        drop(half);
        let far = Instant::now() + Duration::from_secs(600);
        assert_eq!(read_head(&mut server, far), Err(Refusal::Gone));
    }

    #[test]
    fn an_answer_says_its_length_and_close_and_a_head_request_gets_no_body() {
        let answer = Answer {
            status: 404,
            content_type: TEXT,
            body: "not found: try /metrics or /board.json\n".to_string(),
        };
        let full = String::from_utf8(response(&answer, false, true)).expect("utf-8");
        assert!(full.starts_with("HTTP/1.0 404 Not Found\r\n"), "{full}");
        assert!(full.contains("\r\nContent-Length: 39\r\n"), "{full}");
        assert!(full.contains("\r\nConnection: close\r\n"), "{full}");
        assert!(full.ends_with("\r\n\r\nnot found: try /metrics or /board.json\n"));
        let head = String::from_utf8(response(&answer, true, false)).expect("utf-8");
        assert!(head.starts_with("HTTP/1.1 404 Not Found\r\n"), "{head}");
        assert!(head.contains("\r\nContent-Length: 39\r\n"), "{head}");
        assert!(head.ends_with("\r\n\r\n"), "{head}");
    }

    #[test]
    fn an_accept_error_is_told_once_per_change_and_the_loop_goes_on() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let accepted = || {
            let _client = TcpStream::connect(addr).expect("connect");
            Ok(listener.accept().expect("accept").0)
        };
        let emfile = || Err(std::io::Error::from_raw_os_error(24));
        let aborted = || Err(std::io::Error::from(ErrorKind::ConnectionAborted));
        let incoming = vec![
            emfile(),
            emfile(),
            emfile(),
            aborted(),
            accepted(),
            emfile(),
            Err(std::io::Error::from(ErrorKind::Interrupted)),
            accepted(),
        ];
        let (mut handed, mut told) = (0, Vec::new());
        accept_all(
            incoming.into_iter(),
            |_| handed += 1,
            |l| told.push(l.to_string()),
        );
        assert_eq!(handed, 2, "every connection after the errors was handed on");
        assert_eq!(told.len(), 3, "{told:#?}");
        assert!(told[0].contains("Too many open files"), "{told:#?}");
        assert!(told[0].ends_with("(trying again)"), "{told:#?}");
        assert!(told[1].contains("aborted"), "{told:#?}");
        assert_eq!(told[2], told[0], "news again after an accept succeeded");
    }
}
