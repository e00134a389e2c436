//! `--metrics-listen ADDR`: `/metrics` (Prometheus text format) and
//! `/board.json`, from a thread of its own and within fixed bounds.
//!
//! One thread holds at most [`CONNECTIONS`] connections at once and serves
//! them all side by side with `poll(2)`, none of them blocking: a slow
//! client (one that sends nothing, or a byte a second) costs one of those
//! slots for at most [`READ_DEADLINE`] (the whole request head, well under
//! Prometheus's 10 s scrape timeout), never a thread, and never the turn of
//! the others. When every slot is taken, a fresh connection takes the slot
//! of the one that has waited longest for its head (closed with nothing
//! said), so a scrape always gets in, however many clients dawdle. A
//! request head is at most [`HEAD_LIMIT`] bytes; the answer is written
//! within [`WRITE_DEADLINE`] and the connection closed. An accept error (out
//! of descriptors, a connection reset before it was taken) is said once and
//! the loop goes on after a pause. Answers come from the last published
//! snapshot; the poll never waits for this side.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use watchdog::Clock;

use super::metrics::{Slot, exposition};
use crate::clock::SystemClock;
use crate::output::SaidOnce;

/// Connections held at once (each one descriptor); a fresh one past them
/// takes the slot of the oldest still sending its head.
pub(super) const CONNECTIONS: usize = 16;
/// The request line and headers together; a longer head is answered 431.
const HEAD_LIMIT: usize = 8 * 1024;
/// For the whole request head, from the moment the connection is taken.
const READ_DEADLINE: Duration = Duration::from_secs(2);
/// For the whole answer.
const WRITE_DEADLINE: Duration = Duration::from_secs(2);
/// After an accept error, so that one that persists (no descriptor left)
/// does not spin.
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);
/// The longest one `poll` waits: deadlines are checked at least this often.
const TICK: Duration = Duration::from_secs(1);

/// Binds `addr` and answers from `slot` on a thread of its own, for the life
/// of the process; the address actually bound (port 0 picks one).
pub(super) fn listen(addr: &str, slot: Slot) -> Result<SocketAddr, String> {
    let cannot = |err: std::io::Error| format!("--metrics-listen {addr}: cannot listen: {err}");
    let listener = TcpListener::bind(addr).map_err(cannot)?;
    let bound = listener.local_addr().map_err(cannot)?;
    listener.set_nonblocking(true).map_err(cannot)?;
    std::thread::Builder::new()
        .name("metrics".to_string())
        .spawn(move || {
            let mut server = Server {
                listener,
                slot,
                connections: Vec::new(),
                accepting: Accepting::default(),
            };
            loop {
                // A bug in one turn costs its connections, not the listener.
                let turn = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| server.turn()));
                if turn.is_err() {
                    server.connections.clear();
                }
            }
        })
        .map_err(|err| format!("--metrics-listen {addr}: cannot start its thread: {err}"))?;
    Ok(bound)
}

/// One client: where it is in its exchange, and by when it must be done.
struct Connection {
    stream: TcpStream,
    accepted: Instant,
    deadline: Instant,
    state: Exchange,
}

enum Exchange {
    /// Its request head so far.
    Reading(Head),
    /// Its answer, and how much of it is sent.
    Writing(Vec<u8>, usize),
}

struct Server {
    listener: TcpListener,
    slot: Slot,
    connections: Vec<Connection>,
    accepting: Accepting,
}

impl Server {
    /// Waits (at most [`TICK`]) for a connection or a client to be ready,
    /// then serves whatever is, and ends whatever is past its deadline.
    fn turn(&mut self) {
        let now = Instant::now();
        let wait = self
            .connections
            .iter()
            .map(|c| c.deadline.saturating_duration_since(now))
            .min()
            .unwrap_or(TICK)
            .min(TICK);
        let (listener_ready, ready) = {
            let mut fds = Vec::with_capacity(self.connections.len() + 1);
            fds.push(PollFd::new(&self.listener, PollFlags::IN));
            for connection in &self.connections {
                let flags = match connection.state {
                    Exchange::Reading(_) => PollFlags::IN,
                    Exchange::Writing(..) => PollFlags::OUT,
                };
                fds.push(PollFd::new(&connection.stream, flags));
            }
            let timeout = Timespec::try_from(wait).ok();
            // EINTR and the like: nothing is ready; the deadlines still run.
            let _ = poll(&mut fds, timeout.as_ref());
            let ready: Vec<bool> = fds.iter().map(|fd| !fd.revents().is_empty()).collect();
            (ready[0], ready[1..].to_vec())
        };
        // The clients first: a connection taken below is served at once.
        let mut at = 0;
        self.connections.retain_mut(|connection| {
            let keep = !ready[at] || step(connection, &self.slot);
            at += 1;
            keep
        });
        if listener_ready {
            self.accept();
        }
        let now = Instant::now();
        self.connections.retain_mut(|connection| {
            if connection.deadline > now {
                return true;
            }
            if matches!(connection.state, Exchange::Reading(_)) {
                refuse(&connection.stream, &Refusal::TimedOut.answer());
            }
            false
        });
    }

    /// Takes every connection waiting (a few at most per turn, so the
    /// clients already held are served too), each with a slot.
    fn accept(&mut self) {
        for _ in 0..CONNECTIONS {
            let stream = match self.listener.accept() {
                Err(err) if err.kind() == ErrorKind::WouldBlock => return,
                result => {
                    let taken = self
                        .accepting
                        .taken(result.map(|(stream, _)| stream), |line| {
                            crate::output::say(line)
                        });
                    match taken {
                        Some(stream) => stream,
                        None => return,
                    }
                }
            };
            if stream.set_nonblocking(true).is_err() {
                continue;
            }
            if self.connections.len() >= CONNECTIONS {
                self.make_room();
            }
            let now = Instant::now();
            let mut connection = Connection {
                stream,
                accepted: now,
                deadline: now + READ_DEADLINE,
                state: Exchange::Reading(Head::default()),
            };
            // Its request is usually there already.
            if step(&mut connection, &self.slot) {
                self.connections.push(connection);
            }
        }
    }

    /// Closes the connection that has waited longest for its head (else the
    /// oldest of all): a fresh one needs its slot more.
    fn make_room(&mut self) {
        let reading = |c: &Connection| matches!(c.state, Exchange::Reading(_));
        let oldest = self
            .connections
            .iter()
            .enumerate()
            .min_by_key(|(_, c)| (!reading(c), c.accepted))
            .map(|(at, _)| at);
        if let Some(at) = oldest {
            self.connections.swap_remove(at);
        }
    }
}

/// Moves `connection` on as far as it goes without waiting; false once it
/// is done with (answered, refused or gone).
fn step(connection: &mut Connection, slot: &Slot) -> bool {
    if let Exchange::Reading(head) = &mut connection.state {
        let answer = match head.read_from(&mut connection.stream) {
            Ok(None) => return true,
            Ok(Some(request)) => response(
                &route(&request, slot),
                request.method == Method::Head,
                request.http10,
            ),
            Err(Refusal::Gone) => return false,
            Err(refusal) => response(&refusal.answer(), false, false),
        };
        connection.state = Exchange::Writing(answer, 0);
        connection.deadline = Instant::now() + WRITE_DEADLINE;
    }
    let Exchange::Writing(bytes, sent) = &mut connection.state else {
        return false;
    };
    while *sent < bytes.len() {
        match connection.stream.write(&bytes[*sent..]) {
            Ok(0) => return false,
            Ok(n) => *sent += n,
            Err(err) if err.kind() == ErrorKind::Interrupted => {}
            Err(err) if err.kind() == ErrorKind::WouldBlock => return true,
            // A client gone before its answer is its own loss, not the monitor's.
            Err(_) => return false,
        }
    }
    let _ = connection.stream.shutdown(Shutdown::Write);
    false
}

/// Says an accept error once until an accept succeeds again.
#[derive(Default)]
struct Accepting {
    said: SaidOnce<&'static str>,
}

impl Accepting {
    /// The connection `accepted` gave, or `None` after an error was told
    /// (once per change) and waited out: never the end of the loop.
    fn taken(
        &mut self,
        accepted: std::io::Result<TcpStream>,
        tell: impl FnOnce(&str),
    ) -> Option<TcpStream> {
        match accepted {
            Ok(stream) => {
                self.said.clear(&"accept");
                Some(stream)
            }
            Err(err) if err.kind() == ErrorKind::Interrupted => None,
            Err(err) => {
                let line = format!(
                    "bmb-monitor: watch: metrics: cannot accept a connection: {err} (trying again)"
                );
                if self.said.is_news("accept", &line) {
                    tell(&line);
                }
                std::thread::sleep(ACCEPT_PAUSE);
                None
            }
        }
    }
}

/// An answer the client can read without our waiting for it (a fresh
/// socket's send buffer takes it whole, and a non-blocking write gives up
/// rather than wait).
fn refuse(stream: &TcpStream, answer: &Answer) {
    let _ = stream.set_nonblocking(true);
    let _ = (&*stream).write(&response(answer, false, false));
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
enum Parsed {
    Complete(Request),
    Partial,
    Malformed,
}

fn parse_head(buf: &[u8]) -> Parsed {
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
            Parsed::Complete(Request {
                method,
                path,
                http10: parsed.version == Some(0),
            })
        }
        Ok(httparse::Status::Partial) => Parsed::Partial,
        Err(_) => Parsed::Malformed,
    }
}

/// A request head as it arrives, at most [`HEAD_LIMIT`] bytes of it.
#[derive(Default)]
struct Head {
    buf: Vec<u8>,
}

impl Head {
    /// Reads what `stream` has now (without waiting, on a non-blocking
    /// one): the request once its head is whole, `None` while it is not.
    fn read_from(&mut self, stream: &mut impl Read) -> Result<Option<Request>, Refusal> {
        let mut chunk = [0u8; 1024];
        loop {
            let room = (HEAD_LIMIT - self.buf.len()).min(chunk.len());
            match stream.read(&mut chunk[..room]) {
                Ok(0) => return Err(Refusal::Gone),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(err) if err.kind() == ErrorKind::Interrupted => continue,
                Err(err) if err.kind() == ErrorKind::WouldBlock => return Ok(None),
                Err(_) => return Err(Refusal::Gone),
            }
            match parse_head(&self.buf) {
                Parsed::Complete(request) => return Ok(Some(request)),
                Parsed::Malformed => return Err(Refusal::Malformed),
                Parsed::Partial if self.buf.len() == HEAD_LIMIT => return Err(Refusal::TooLarge),
                Parsed::Partial => {}
            }
        }
    }
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

    fn check(head: &str, expected: Parsed) {
        assert_eq!(parse_head(head.as_bytes()), expected, "{head:?}");
    }

    fn request(method: Method, path: &str, http10: bool) -> Parsed {
        Parsed::Complete(Request {
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
        check("GET /metrics HTTP/1.1\r\nHo", Parsed::Partial);
        check("GET /AAAAAAAA", Parsed::Partial);
        check("\u{1}\u{2} nonsense\r\n\r\n", Parsed::Malformed);
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
        assert_eq!(
            Head::default().read_from(&mut server),
            Err(Refusal::TooLarge)
        );
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
        assert_eq!(
            Head::default()
                .read_from(&mut server)
                .map(|r| r.map(|r| r.path)),
            Ok(Some("/metrics".to_string()))
        );
    }

    #[test]
    fn a_silent_client_is_not_waited_for_and_a_closed_one_is_gone() {
        let (_silent, mut server) = pair();
        server.set_nonblocking(true).expect("non-blocking");
        let mut head = Head::default();
        assert_eq!(head.read_from(&mut server), Ok(None));
        let (mut half, mut server) = pair();
        half.write_all(b"GET /metrics HTTP/1.1\r\nHo")
            .expect("write");
        drop(half);
        assert_eq!(Head::default().read_from(&mut server), Err(Refusal::Gone));
    }

    #[test]
    fn a_head_sent_a_byte_at_a_time_is_read_across_calls() {
        let (mut client, mut server) = pair();
        server.set_nonblocking(true).expect("non-blocking");
        let mut head = Head::default();
        let text = b"GET /board.json HTTP/1.1\r\n\r\n";
        for (at, byte) in text.iter().enumerate() {
            client.write_all(&[*byte]).expect("write");
            // Wait for the byte to arrive, then read it without blocking.
            let mut fds = [PollFd::new(&server, PollFlags::IN)];
            poll(&mut fds, None).expect("poll");
            let read = head.read_from(&mut server).expect("no refusal");
            if at + 1 < text.len() {
                assert_eq!(read, None, "after {} bytes", at + 1);
            } else {
                assert_eq!(read.map(|r| r.path), Some("/board.json".to_string()));
            }
        }
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
        let mut accepting = Accepting::default();
        for result in incoming {
            if accepting
                .taken(result, |l| told.push(l.to_string()))
                .is_some()
            {
                handed += 1;
            }
        }
        assert_eq!(handed, 2, "every connection after the errors was handed on");
        assert_eq!(told.len(), 3, "{told:#?}");
        assert!(told[0].contains("Too many open files"), "{told:#?}");
        assert!(told[0].ends_with("(trying again)"), "{told:#?}");
        assert!(told[1].contains("aborted"), "{told:#?}");
        assert_eq!(told[2], told[0], "news again after an accept succeeded");
    }

    /// Every slot held by a client that sends nothing: a fresh connection
    /// takes the oldest one's slot and is answered; the evicted client is
    /// closed.
    #[test]
    fn a_fresh_connection_takes_the_oldest_slot_when_all_are_held() {
        let published = super::super::metrics::Published {
            board: watchdog::session::board::Board::new(1, 0, 30, 5, &[]),
            json: "{}".to_string(),
            operations: super::super::metrics::Operations::started(0),
        };
        let slot: Slot = std::sync::Arc::new(std::sync::Mutex::new(std::sync::Arc::new(published)));
        let addr = listen("127.0.0.1:0", slot).expect("listen");
        let mut silent: Vec<TcpStream> = (0..CONNECTIONS + 4)
            .map(|_| TcpStream::connect(addr).expect("connect"))
            .collect();
        let mut scrape = TcpStream::connect(addr).expect("connect");
        scrape
            .write_all(b"GET /board.json HTTP/1.0\r\n\r\n")
            .expect("a request");
        let mut answer = String::new();
        scrape.read_to_string(&mut answer).expect("an answer");
        assert!(answer.starts_with("HTTP/1.0 200 OK\r\n"), "{answer}");
        assert!(answer.ends_with("\r\n\r\n{}"), "{answer}");
        // The first silent one lost its slot: closed, nothing said.
        let mut rest = Vec::new();
        silent[0].read_to_end(&mut rest).expect("closed");
        assert!(rest.is_empty(), "{rest:?}");
        silent.clear();
    }
}
