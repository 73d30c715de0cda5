//! How a console is started ([`Options`]) and what is checked of it before it listens.

use std::net::SocketAddr;
#[cfg(feature = "tls")]
use std::sync::Arc;
use std::time::Duration;

use crate::{Operator, check_name};

/// How a console is started.
#[derive(Debug, Clone)]
pub struct Options {
    /// The address to listen on (port 0: a free one).
    pub listen: SocketAddr,
    /// Show, never change: no form, every `POST` refused.
    pub read_only: bool,
    /// Who settles through this console when logged in with its token (not an operator's own): at most
    /// [`tool_contract::journal::MAX_BY_BYTES`] bytes, checked at start.
    pub by: String,
    /// The token to use instead of a random one (required for an address other than loopback). A
    /// random token is printed at start and logs in for [`Options::session_lifetime`] from then; a
    /// token of one's own has no such end.
    pub token: Option<String>,
    /// The people who may log in, each with a token of their own and recorded as `by` under their
    /// own name. When there are any, the console's token ([`Options::token`]) logs no one in.
    pub operators: Vec<Operator>,
    /// Listen on an address other than loopback (which also needs [`Options::token`] or
    /// [`Options::operators`], and TLS).
    pub allow_remote: bool,
    /// The names the console answers to besides its address (`console.example.org`, or with a port),
    /// as the operator types them: accepted in the `Host` check and its origin. A wildcard listen
    /// (`0.0.0.0`, `[::]`) needs at least one; the first is the one printed.
    pub hosts: Vec<String>,
    /// A session unused this long ends.
    pub idle_timeout: Duration,
    /// A session ends this long after its login, however busy.
    pub session_lifetime: Duration,
    /// Serve HTTPS with this configuration (feature `tls`; see
    /// [`server_config`](crate::server_config)): the session cookie is then `Secure`. An address other
    /// than loopback is served only over TLS.
    #[cfg(feature = "tls")]
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

/// How long a session may sit unused, by default.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// How long a session lasts after its login, by default.
pub const SESSION_LIFETIME: Duration = Duration::from_secs(12 * 3600);

impl Default for Options {
    fn default() -> Options {
        Options {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            read_only: false,
            by: "operator".to_owned(),
            token: None,
            operators: Vec::new(),
            allow_remote: false,
            hosts: Vec::new(),
            idle_timeout: IDLE_TIMEOUT,
            session_lifetime: SESSION_LIFETIME,
            #[cfg(feature = "tls")]
            tls: None,
        }
    }
}

impl Options {
    /// Whether the console is served over TLS.
    pub(crate) fn over_tls(&self) -> bool {
        #[cfg(feature = "tls")]
        return self.tls.is_some();
        #[cfg(not(feature = "tls"))]
        false
    }

    /// What is wrong with these options for a console listening on `addr` (`served`: by its own
    /// listener, which must then be TLS away from loopback; a mounted console's host serves it).
    pub(crate) fn check(&self, addr: SocketAddr, served: bool) -> Result<(), String> {
        check_name(&self.by).map_err(|why| format!("the name to record (--by) {why}"))?;
        for operator in &self.operators {
            check_name(&operator.name).map_err(|why| format!("the operator's name {why}"))?;
        }
        for host in &self.hosts {
            if host.is_empty()
                || host.contains(['/', '@', '?', '#', ' ', ','])
                || host.chars().any(char::is_control)
            {
                return Err(format!("{host:?} is not a host name (--host console.example.org)"));
            }
        }
        if addr.ip().is_loopback() {
            return Ok(());
        }
        if !self.allow_remote || (self.token.is_none() && self.operators.is_empty()) {
            return Err(format!(
                "{addr} is not a loopback address: listening there needs --allow-remote and --token-file FILE \
                 or --operators FILE (tokens of your own, kept out of the process list)"
            ));
        }
        if served && !self.over_tls() {
            return Err(format!(
                "{addr} is not a loopback address: a token and a session cookie would cross the network in \
                 the clear; serve it over TLS (--tls-cert FILE --tls-key FILE), or listen on 127.0.0.1 and \
                 reach it through an SSH tunnel (docs/console.md)"
            ));
        }
        if addr.ip().is_unspecified() && self.hosts.is_empty() {
            return Err(format!(
                "{addr} listens on every address: say the names it is opened by with --host NAME, which \
                 the Host check accepts"
            ));
        }
        Ok(())
    }
}
