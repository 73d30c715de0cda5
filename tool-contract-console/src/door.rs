//! Who may come in: the operators and their tokens, a session per login (drawn from the operating
//! system's random source, ended by logging out, by idling or by age), and the limit on failed logins
//! from one client.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::time::Instant;
use tool_contract::journal::MAX_BY_BYTES;

/// The most sessions a console keeps at once; past it, logging in ends the one idle longest.
const MAX_SESSIONS: usize = 1_000;

/// Failed logins from one client within [`FAILURE_WINDOW`] before the next is refused with 429.
pub(crate) const MAX_FAILURES: usize = 5;

/// The window over which failed logins are counted.
pub(crate) const FAILURE_WINDOW: Duration = Duration::from_secs(60);

/// The most clients whose failures are remembered; past it, those with no recent failure are forgotten.
const MAX_CLIENTS: usize = 10_000;

/// A person who may log in to a console with a token of their own, and under whose name every
/// settlement and answer of their session is recorded.
#[derive(Clone, PartialEq, Eq)]
pub struct Operator {
    /// The name recorded as `by`: at most [`MAX_BY_BYTES`] bytes, no control character.
    pub name: String,
    /// The SHA-256 digest of the person's token (the token itself is never stored).
    pub token_sha256: [u8; 32],
}

impl std::fmt::Debug for Operator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Operator").field("name", &self.name).finish_non_exhaustive()
    }
}

impl Operator {
    /// An operator whose token is `token` (its digest is kept, not the token).
    pub fn with_token(name: impl Into<String>, token: &str) -> Operator {
        Operator { name: name.into(), token_sha256: digest(token.as_bytes()) }
    }

    /// Read an operators file: one person a line, their name and then the SHA-256 of their token in
    /// hex (`alice 5e88...`; the name is everything before the last word, so it may hold spaces).
    /// Blank lines and lines starting with `#` are skipped. Every name is checked as [`check_name`]
    /// does; a name or a digest given twice is refused.
    pub fn parse_file(text: &str) -> Result<Vec<Operator>, String> {
        let mut operators: Vec<Operator> = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let at = n + 1;
            let Some((name, hex)) = line.rsplit_once(char::is_whitespace) else {
                return Err(format!("line {at}: a name, then the SHA-256 of the person's token in hex"));
            };
            let name = name.trim();
            check_name(name).map_err(|why| format!("line {at}: the name {why}"))?;
            let token_sha256 = parse_digest(hex).ok_or_else(|| {
                format!("line {at}: {name}'s token digest is not 64 hex characters (a SHA-256)")
            })?;
            if operators.iter().any(|o| o.name == name) {
                return Err(format!("line {at}: {name} is named twice"));
            }
            if operators.iter().any(|o| o.token_sha256 == token_sha256) {
                return Err(format!("line {at}: {name}'s token digest is another person's too"));
            }
            operators.push(Operator { name: name.to_owned(), token_sha256 });
        }
        if operators.is_empty() {
            return Err("it names no one".into());
        }
        Ok(operators)
    }
}

/// Whether `name` may be recorded as who settled or answered: not blank, no control character, at
/// most [`MAX_BY_BYTES`] bytes (the limit a settlement and an approval are held to when written).
pub fn check_name(name: &str) -> Result<(), String> {
    if name.trim().is_empty() {
        return Err("is empty".into());
    }
    if name.chars().any(char::is_control) {
        return Err(format!("{name:?} holds a control character"));
    }
    if name.len() > MAX_BY_BYTES {
        return Err(format!(
            "is {} bytes long; a name recorded as `by` is at most {MAX_BY_BYTES}",
            name.len()
        ));
    }
    Ok(())
}

fn parse_digest(hex: &str) -> Option<[u8; 32]> {
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in hex.as_bytes().chunks(2).enumerate() {
        let text = std::str::from_utf8(pair).ok()?;
        out[i] = u8::from_str_radix(text, 16).ok()?;
    }
    Some(out)
}

pub(crate) fn digest(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// `bytes` in lower-case hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// 32 bytes from the operating system's random source, in hex.
pub(crate) fn random_token() -> Result<String, String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| format!("the operating system's random source failed: {e}"))?;
    Ok(hex(&bytes))
}

/// One login.
struct Session {
    by: String,
    started: Instant,
    seen: Instant,
}

/// The sessions of a console, by the digest of their cookie's value (so looking one up compares no
/// secret byte by byte).
pub(crate) struct Sessions {
    open: Mutex<HashMap<[u8; 32], Session>>,
    idle: Duration,
    lifetime: Duration,
}

impl Sessions {
    pub(crate) fn new(idle: Duration, lifetime: Duration) -> Sessions {
        Sessions { open: Mutex::new(HashMap::new()), idle, lifetime }
    }

    fn live(&self, session: &Session, now: Instant) -> bool {
        now.saturating_duration_since(session.seen) < self.idle
            && now.saturating_duration_since(session.started) < self.lifetime
    }

    /// A new session for `by`: the cookie's value.
    pub(crate) fn open(&self, by: &str) -> Result<String, String> {
        let id = random_token()?;
        let now = Instant::now();
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        open.retain(|_, s| self.live(s, now));
        if open.len() >= MAX_SESSIONS {
            let idlest = open.iter().min_by_key(|(_, s)| s.seen).map(|(k, _)| *k);
            if let Some(idlest) = idlest {
                open.remove(&idlest);
            }
        }
        open.insert(digest(id.as_bytes()), Session { by: by.to_owned(), started: now, seen: now });
        Ok(id)
    }

    /// Who holds the session `id`, if it is live; it counts as used now.
    pub(crate) fn find(&self, id: &str) -> Option<String> {
        let now = Instant::now();
        let key = digest(id.as_bytes());
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let session = open.get_mut(&key)?;
        if !self.live(session, now) {
            open.remove(&key);
            return None;
        }
        session.seen = now;
        Some(session.by.clone())
    }

    /// End the session `id` (logging out).
    pub(crate) fn end(&self, id: &str) {
        self.open.lock().unwrap_or_else(|e| e.into_inner()).remove(&digest(id.as_bytes()));
    }
}

/// Failed logins, per client address (an IPv6 client by its /64, which one host usually holds whole).
pub(crate) struct Logins {
    failures: Mutex<HashMap<IpAddr, VecDeque<Instant>>>,
}

fn client_of(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let mut segments = v6.segments();
                segments[4..].fill(0);
                IpAddr::V6(segments.into())
            }
        },
        v4 => v4,
    }
}

impl Logins {
    pub(crate) fn new() -> Logins {
        Logins { failures: Mutex::new(HashMap::new()) }
    }

    /// How long `ip` must wait before it may try again, if it has failed too often lately.
    pub(crate) fn wait(&self, ip: IpAddr) -> Option<Duration> {
        let now = Instant::now();
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        let times = failures.get_mut(&client_of(ip))?;
        while times.front().is_some_and(|t| now.saturating_duration_since(*t) >= FAILURE_WINDOW) {
            times.pop_front();
        }
        if times.len() < MAX_FAILURES {
            return None;
        }
        let oldest = *times.front()?;
        Some(FAILURE_WINDOW.saturating_sub(now.saturating_duration_since(oldest)))
    }

    /// Count a failed login from `ip`.
    pub(crate) fn failed(&self, ip: IpAddr) {
        let now = Instant::now();
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        if failures.len() >= MAX_CLIENTS {
            failures.retain(|_, times| {
                times.back().is_some_and(|t| now.saturating_duration_since(*t) < FAILURE_WINDOW)
            });
        }
        let times = failures.entry(client_of(ip)).or_default();
        times.push_back(now);
        while times.len() > MAX_FAILURES {
            times.pop_front();
        }
    }

    /// A login from `ip` succeeded: its failures are forgotten.
    pub(crate) fn succeeded(&self, ip: IpAddr) {
        self.failures.lock().unwrap_or_else(|e| e.into_inner()).remove(&client_of(ip));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_session_ends_when_idle_too_long_when_too_old_or_when_ended() {
        let sessions = Sessions::new(Duration::from_secs(30 * 60), Duration::from_secs(8 * 3600));
        let a = sessions.open("alice").unwrap();
        let b = sessions.open("bob").unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), 64);
        assert_eq!(sessions.find(&a).as_deref(), Some("alice"));
        assert_eq!(sessions.find(&b).as_deref(), Some("bob"));
        assert_eq!(sessions.find("0000"), None);

        // Idle: used every 29 minutes, a session lives on; left 30 minutes, it ends.
        tokio::time::advance(Duration::from_secs(29 * 60)).await;
        assert_eq!(sessions.find(&a).as_deref(), Some("alice"));
        tokio::time::advance(Duration::from_secs(60)).await;
        assert_eq!(sessions.find(&b), None, "bob idled 30 minutes");
        // Absolute: however busy, 8 hours after the login it ends.
        for _ in 0..16 {
            tokio::time::advance(Duration::from_secs(28 * 60)).await;
            let _ = sessions.find(&a);
        }
        assert_eq!(sessions.find(&a).as_deref(), Some("alice"), "7h58m after the login");
        tokio::time::advance(Duration::from_secs(2 * 60)).await;
        assert_eq!(sessions.find(&a), None, "8 hours after the login");

        let c = sessions.open("carol").unwrap();
        sessions.end(&c);
        assert_eq!(sessions.find(&c), None, "logged out");
    }

    #[tokio::test(start_paused = true)]
    async fn failed_logins_from_one_client_are_limited_for_a_minute() {
        let logins = Logins::new();
        let ip: IpAddr = "192.0.2.7".parse().unwrap();
        let other: IpAddr = "192.0.2.8".parse().unwrap();
        for _ in 0..MAX_FAILURES {
            assert_eq!(logins.wait(ip), None);
            logins.failed(ip);
            tokio::time::advance(Duration::from_secs(1)).await;
        }
        // Five failures in the last five seconds: wait until the first is a minute old.
        assert_eq!(logins.wait(ip), Some(Duration::from_secs(55)));
        assert_eq!(logins.wait(other), None, "another client is not held back");
        tokio::time::advance(Duration::from_secs(55)).await;
        assert_eq!(logins.wait(ip), None, "a minute after the first failure, one more try");
        logins.failed(ip);
        assert_eq!(logins.wait(ip), Some(Duration::from_secs(1)));
        logins.succeeded(ip);
        assert_eq!(logins.wait(ip), None);

        // An IPv6 client is counted by its /64.
        let v6a: IpAddr = "2001:db8:1:2::1".parse().unwrap();
        let v6b: IpAddr = "2001:db8:1:2:ffff::9".parse().unwrap();
        for _ in 0..MAX_FAILURES {
            logins.failed(v6a);
        }
        assert!(logins.wait(v6b).is_some());
    }

    #[test]
    fn an_operators_file_names_each_person_once_within_the_limit() {
        let alice = hex(&digest(b"alice's token"));
        let bob = hex(&digest(b"bob's token"));
        let text = format!("# on call\nalice {alice}\n\n  Bob Smith   {bob}\n");
        let operators = Operator::parse_file(&text).unwrap();
        assert_eq!(
            operators,
            [
                Operator::with_token("alice", "alice's token"),
                Operator::with_token("Bob Smith", "bob's token")
            ]
        );

        let long = "x".repeat(MAX_BY_BYTES + 1);
        for (bad, why) in [
            (format!("alice {alice}\nalice {bob}"), "line 2: alice is named twice"),
            (format!("alice {alice}\nbob {alice}"), "another person's"),
            (format!("alice {}", &alice[..60]), "line 1: alice's token digest is not 64 hex"),
            ("alice".to_owned(), "line 1: a name, then"),
            (format!("{long} {alice}"), "bytes long; a name recorded as `by` is at most 200"),
            ("# nobody\n".to_owned(), "names no one"),
        ] {
            let err = Operator::parse_file(&bad).unwrap_err();
            assert!(err.contains(why), "{err}");
        }
        assert!(check_name(&"é".repeat(100)).is_ok());
        assert!(check_name(&"é".repeat(101)).is_err(), "bytes, not characters");
        assert!(check_name("a\u{7}b").is_err());
        assert!(check_name("  ").is_err());
    }
}
