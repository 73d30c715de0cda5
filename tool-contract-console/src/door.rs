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

/// How long each login from a client past [`MAX_FAILURES`] waits before its token is looked at: a
/// right token still logs in (no one is locked out by another's failures), and guessing slows to one
/// try a second for each connection.
pub(crate) const THROTTLE: Duration = Duration::from_secs(1);

/// The most clients whose failures are remembered; past it, those with no recent failure are forgotten.
const MAX_CLIENTS: usize = 10_000;

/// How many rounds of PBKDF2-HMAC-SHA256 a token made by [`Operator::line`] is hashed with: checking
/// one guess costs that much, for whoever holds the operators file too.
pub const TOKEN_ROUNDS: u32 = 100_000;

/// The fewest rounds an operators file may name.
const MIN_ROUNDS: u32 = 10_000;

/// The most rounds an operators file may name (a line of a billion would stall every login).
const MAX_ROUNDS: u32 = 10_000_000;

/// A person who may log in to a console with a token of their own, and under whose name every
/// settlement and answer of their session is recorded.
#[derive(Clone, PartialEq, Eq)]
pub struct Operator {
    /// The name recorded as `by`: at most [`MAX_BY_BYTES`] bytes, no control character.
    pub name: String,
    /// The token's salted, slow hash (the token itself is never stored).
    hash: TokenHash,
}

/// PBKDF2-HMAC-SHA256 of a token: its rounds, its salt and the 32 bytes it made.
#[derive(Clone, PartialEq, Eq)]
struct TokenHash {
    rounds: u32,
    salt: [u8; 16],
    derived: [u8; 32],
}

impl TokenHash {
    fn of(token: &str, rounds: u32, salt: [u8; 16]) -> TokenHash {
        let mut derived = [0u8; 32];
        pbkdf2::pbkdf2_hmac::<Sha256>(token.as_bytes(), &salt, rounds, &mut derived);
        TokenHash { rounds, salt, derived }
    }

    fn matches(&self, token: &str) -> bool {
        let given = TokenHash::of(token, self.rounds, self.salt);
        constant_time_eq(&given.derived, &self.derived)
    }

    /// `pbkdf2-sha256:ROUNDS:SALT:HASH`, salt and hash in hex.
    fn to_word(&self) -> String {
        format!("pbkdf2-sha256:{}:{}:{}", self.rounds, hex(&self.salt), hex(&self.derived))
    }

    fn parse(word: &str) -> Result<TokenHash, &'static str> {
        let mut parts = word.split(':');
        let (Some("pbkdf2-sha256"), Some(rounds), Some(salt), Some(derived), None) =
            (parts.next(), parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err("is not pbkdf2-sha256:ROUNDS:SALT:HASH");
        };
        let rounds = rounds
            .parse::<u32>()
            .ok()
            .filter(|r| (MIN_ROUNDS..=MAX_ROUNDS).contains(r))
            .ok_or("names rounds outside 10000 to 10000000")?;
        let salt = parse_hex::<16>(salt).ok_or("has a salt that is not 32 hex characters")?;
        let derived = parse_hex::<32>(derived).ok_or("has a hash that is not 64 hex characters")?;
        Ok(TokenHash { rounds, salt, derived })
    }
}

impl std::fmt::Debug for Operator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Operator").field("name", &self.name).finish_non_exhaustive()
    }
}

impl Operator {
    /// An operator whose token is `token`: its hash is kept (salted, [`TOKEN_ROUNDS`] rounds), not
    /// the token. An error only when the operating system's random source fails.
    pub fn with_token(name: impl Into<String>, token: &str) -> Result<Operator, String> {
        Ok(Operator { name: name.into(), hash: TokenHash::of(token, TOKEN_ROUNDS, random_salt()?) })
    }

    /// A new operator `name`: a random token (32 bytes from the operating system, in hex) to give
    /// them, and the line of an operators file that lets that token in.
    ///
    /// ```
    /// use tool_contract_console::Operator;
    ///
    /// let (token, line) = Operator::line("alice")?;
    /// assert!(line.starts_with("alice pbkdf2-sha256:100000:"));
    /// let operators = Operator::parse_file(&line)?;
    /// assert!(operators[0].lets_in(&token) && !operators[0].lets_in("password"));
    /// # Ok::<(), String>(())
    /// ```
    pub fn line(name: &str) -> Result<(String, String), String> {
        check_name(name).map_err(|why| format!("the name {why}"))?;
        let token = random_token()?;
        let operator = Operator::with_token(name, &token)?;
        Ok((token, format!("{name} {}", operator.hash.to_word())))
    }

    /// Whether `token` is this person's. It costs the hash's rounds: call it off the async runtime.
    pub fn lets_in(&self, token: &str) -> bool {
        self.hash.matches(token)
    }

    /// Read an operators file: one person a line, their name and then their token's hash as
    /// [`Operator::line`] writes it (`alice pbkdf2-sha256:100000:<salt>:<hash>`; the name is everything
    /// before the last word, so it may hold spaces). Blank lines and lines starting with `#` are
    /// skipped. Every name is checked as [`check_name`] does; a name given twice is refused, and so is
    /// a plain SHA-256 of a token (a fast hash: a stolen file would give up weak tokens at once).
    pub fn parse_file(text: &str) -> Result<Vec<Operator>, String> {
        let mut operators: Vec<Operator> = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let at = n + 1;
            let Some((name, word)) = line.rsplit_once(char::is_whitespace) else {
                return Err(format!(
                    "line {at}: a name, then the hash of the person's token (make a line with `tool-contract \
                     console --make-operator NAME`)"
                ));
            };
            let name = name.trim();
            check_name(name).map_err(|why| format!("line {at}: the name {why}"))?;
            if parse_hex::<32>(word).is_some() {
                return Err(format!(
                    "line {at}: {name}'s token is given as a plain SHA-256, which a stolen file gives up at \
                     once: make a new line with `tool-contract console --make-operator {name}`"
                ));
            }
            let hash = TokenHash::parse(word).map_err(|why| {
                format!(
                    "line {at}: {name}'s token hash {why} (make a line with `tool-contract console \
                     --make-operator NAME`)"
                )
            })?;
            if operators.iter().any(|o| o.name == name) {
                return Err(format!("line {at}: {name} is named twice"));
            }
            operators.push(Operator { name: name.to_owned(), hash });
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

/// `N` bytes written as `2 * N` hex characters.
fn parse_hex<const N: usize>(hex: &str) -> Option<[u8; N]> {
    if hex.len() != 2 * N || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut out = [0u8; N];
    for (i, pair) in hex.as_bytes().chunks(2).enumerate() {
        let text = std::str::from_utf8(pair).ok()?;
        out[i] = u8::from_str_radix(text, 16).ok()?;
    }
    Some(out)
}

/// 16 bytes from the operating system's random source.
fn random_salt() -> Result<[u8; 16], String> {
    let mut salt = [0u8; 16];
    getrandom::fill(&mut salt).map_err(|e| format!("the operating system's random source failed: {e}"))?;
    Ok(salt)
}

/// Whether `a` and `b` are equal, in a time that tells nothing of where they differ.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
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
    /// What the session's last action said, and the id the page it goes back to names it by.
    said: Option<(String, String)>,
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
        open.insert(
            digest(id.as_bytes()),
            Session { by: by.to_owned(), started: now, seen: now, said: None },
        );
        Ok(id)
    }

    /// Keep `text`, what an action of the session `id` said, for the page it goes back to: the id
    /// that page names it by (`?said=ID`), so a link of someone else's can show no text of theirs.
    pub(crate) fn note(&self, id: &str, text: String) -> Option<String> {
        let note = random_token().ok()?[..16].to_owned();
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        open.get_mut(&digest(id.as_bytes()))?.said = Some((note.clone(), text));
        Some(note)
    }

    /// What the session `id`'s last action said, if `note` names it.
    pub(crate) fn said(&self, id: &str, note: &str) -> Option<String> {
        let open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let (kept, text) = open.get(&digest(id.as_bytes()))?.said.as_ref()?;
        constant_time_eq(kept.as_bytes(), note.as_bytes()).then(|| text.clone())
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

/// The ticket of the printed login address: it logs in once, until its end (the console's token
/// stays good for the login page).
pub(crate) struct Ticket {
    open: Mutex<Option<([u8; 32], Option<Instant>)>>,
}

impl Ticket {
    /// A new ticket, good once until `until`: it, and the text the address carries.
    pub(crate) fn new(until: Option<Instant>) -> Result<(Ticket, String), String> {
        let text = random_token()?;
        Ok((Ticket { open: Mutex::new(Some((digest(text.as_bytes()), until))) }, text))
    }

    /// No ticket: the address printed carries none.
    pub(crate) fn none() -> Ticket {
        Ticket { open: Mutex::new(None) }
    }

    /// Whether `given` is the ticket, unused and in time; if it is, it is used up.
    pub(crate) fn take(&self, given: &str) -> bool {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let Some((kept, until)) = *open else { return false };
        let fresh = until.is_none_or(|until| Instant::now() < until);
        let same = constant_time_eq(&digest(given.as_bytes()), &kept);
        if same && fresh {
            *open = None;
        }
        same && fresh
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
    async fn the_printed_ticket_logs_in_once_and_only_in_time() {
        let until = Instant::now() + Duration::from_secs(60);
        let (ticket, text) = Ticket::new(Some(until)).unwrap();
        assert!(!ticket.take("a guess"), "a wrong ticket");
        assert!(ticket.take(&text), "the ticket, once");
        assert!(!ticket.take(&text), "never twice");
        let (late, text) = Ticket::new(Some(until)).unwrap();
        tokio::time::advance(Duration::from_secs(60)).await;
        assert!(!late.take(&text), "not after its end");
        assert!(!Ticket::none().take(""));
    }

    #[test]
    fn a_session_keeps_what_its_last_action_said_under_an_id_of_its_own() {
        let sessions = Sessions::new(Duration::from_secs(60), Duration::from_secs(600));
        let (a, b) = (sessions.open("alice").unwrap(), sessions.open("bob").unwrap());
        let note = sessions.note(&a, "Settled: landed".into()).unwrap();
        assert_eq!(sessions.said(&a, &note).as_deref(), Some("Settled: landed"));
        assert_eq!(sessions.said(&b, &note), None, "another session's words are not shown");
        assert_eq!(sessions.said(&a, "Approved+everything"), None, "a link's words are not shown");
        assert_eq!(sessions.note("no-such-session", "x".into()), None);
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
    fn an_operators_file_holds_slow_salted_hashes_and_names_each_person_once() {
        let (alice_token, alice) = Operator::line("alice").unwrap();
        let (bob_token, bob) = Operator::line("bob").unwrap();
        let bob = bob.replacen("bob", "Bob Smith", 1);
        let text = format!("# on call\n{alice}\n\n  {bob}\n");
        let operators = Operator::parse_file(&text).unwrap();
        assert_eq!(operators.iter().map(|o| o.name.as_str()).collect::<Vec<_>>(), ["alice", "Bob Smith"]);
        assert!(operators[0].lets_in(&alice_token) && !operators[0].lets_in(&bob_token));
        assert!(operators[1].lets_in(&bob_token) && !operators[1].lets_in(""));
        // One token, two lines: the salts differ, so the lines do.
        let twice = Operator::with_token("carol", "same").unwrap();
        assert_ne!(twice.hash.to_word(), Operator::with_token("carol", "same").unwrap().hash.to_word());
        assert!(twice.lets_in("same"));
        assert_eq!(alice.split(':').nth(1), Some(TOKEN_ROUNDS.to_string().as_str()));

        let sha256 = hex(&digest(b"password"));
        let word = alice.rsplit_once(' ').unwrap().1.to_owned();
        let long = "x".repeat(MAX_BY_BYTES + 1);
        for (bad, why) in [
            (format!("alice {sha256}"), "plain SHA-256"),
            (format!("{alice}\nalice {word}"), "line 2: alice is named twice"),
            (
                format!("alice {}", &word[..word.len() - 2]),
                "line 1: alice's token hash has a hash that is not 64 hex",
            ),
            (format!("alice {}", word.replace(":100000:", ":10:")), "rounds outside"),
            ("alice md5:abc".to_owned(), "is not pbkdf2-sha256"),
            ("alice".to_owned(), "line 1: a name, then"),
            (format!("{long} {word}"), "bytes long; a name recorded as `by` is at most 200"),
            ("# nobody\n".to_owned(), "names no one"),
        ] {
            let err = Operator::parse_file(&bad).unwrap_err();
            assert!(err.contains(why), "{bad}: {err}");
            assert!(err.contains("--make-operator") || !why.contains("SHA"), "{err}");
        }
        assert!(check_name(&"é".repeat(100)).is_ok());
        assert!(check_name(&"é".repeat(101)).is_err(), "bytes, not characters");
        assert!(check_name("a\u{7}b").is_err());
        assert!(check_name("  ").is_err());
    }
}
