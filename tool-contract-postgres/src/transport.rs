//! How an operator's command reaches PostgreSQL: TLS decided from the connection string's `sslmode`
//! and a file of certificates to trust, before any byte is sent, and said when it is clear text
//! across a network.

use std::fmt;
use std::path::{Path, PathBuf};

use tokio_postgres::Config;
use tokio_postgres::config::{Host, SslMode};

use crate::conninfo::{label, redact};

/// Where the system's certificates are when `SSL_CERT_FILE` does not say.
const SYSTEM_ROOTS: &str = "/etc/ssl/certs/ca-certificates.crt";

/// How a connection to PostgreSQL is protected, decided before connecting by [`Transport::plan`]
/// from the connection string's `sslmode` and a file of certificates to trust (`--pg-ca-file` of
/// the project's commands); [`PgJournal::connect_over`](crate::PgJournal::connect_over) connects so.
///
/// | `sslmode` | certificates given | the connection |
/// |---|---|---|
/// | none | yes | TLS or nothing, the server's certificate and name checked against them |
/// | `require`, `verify-ca`, `verify-full` | yes | the same |
/// | `require`, `verify-ca`, `verify-full` | no | the same, against the system's certificates (`SSL_CERT_FILE`, else `/etc/ssl/certs/ca-certificates.crt`) |
/// | `prefer` | yes | TLS checked as above if the server offers it, else clear text ([`Transport::warning`]) |
/// | none, `prefer` | no | clear text ([`Transport::warning`] unless the server is local) |
/// | `disable` | no | clear text ([`Transport::warning`] unless the server is local) |
///
/// TLS always checks the certificate and the name (rustls has no unchecked mode), so `require` is
/// as strict as `verify-full`. `disable` with certificates given, and `allow`, are refused.
///
/// ```
/// use std::path::Path;
/// use tool_contract_postgres::Transport;
///
/// let tls = Transport::plan("postgres://ops@db.internal/agents", Some(Path::new("ca.pem")))?;
/// assert!(tls.is_tls() && tls.warning().is_none());
/// let clear = Transport::plan("postgres://ops@db.internal/agents", None)?;
/// assert!(!clear.is_tls() && clear.warning().unwrap().contains("clear text"));
/// let local = Transport::plan("host=/run/postgresql dbname=agents", None)?;
/// assert!(local.warning().is_none());
/// # Ok::<(), String>(())
/// ```
#[derive(Clone)]
pub struct Transport {
    pub(crate) config: Config,
    /// The certificates TLS checks the server's against; `None`: clear text.
    roots: Option<PathBuf>,
    /// Every host is a Unix socket or a loopback address.
    local: bool,
    label: String,
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The configuration may hold a password: the label never does.
        f.debug_struct("Transport")
            .field("to", &self.label)
            .field("tls", &self.config.get_ssl_mode())
            .field("roots", &self.roots)
            .field("local", &self.local)
            .finish()
    }
}

impl Transport {
    /// How `conninfo` is reached, trusting the PEM certificates in `ca_file` if given (see the
    /// table above). The error says what is wrong with the connection string, without its password.
    pub fn plan(conninfo: &str, ca_file: Option<&Path>) -> Result<Transport, String> {
        let (mode, parsable) = sslmode(conninfo)?;
        let mut config: Config = parsable
            .parse()
            .map_err(|e| format!("{}: not a PostgreSQL connection string: {e}", redact(conninfo)))?;
        let system =
            || std::env::var_os("SSL_CERT_FILE").map_or_else(|| PathBuf::from(SYSTEM_ROOTS), PathBuf::from);
        let roots = match (mode, ca_file) {
            (Some(Mode::Disable), Some(_)) => {
                return Err(format!(
                    "{}: sslmode=disable refuses TLS, and certificates to trust were given: drop one",
                    redact(conninfo)
                ));
            }
            (Some(Mode::Disable), None) | (None | Some(Mode::Prefer), None) => None,
            (None | Some(Mode::Require), Some(file)) | (Some(Mode::Prefer), Some(file)) => {
                Some(file.to_path_buf())
            }
            (Some(Mode::Require), None) => Some(system()),
        };
        config.ssl_mode(match (&roots, mode) {
            (None, _) => SslMode::Disable,
            (Some(_), Some(Mode::Prefer)) => SslMode::Prefer,
            (Some(_), _) => SslMode::Require,
        });
        let local = is_local(&config);
        Ok(Transport { label: label(&config), config, roots, local })
    }

    /// Whether the connection is made over TLS (required, or tried first with `sslmode=prefer`).
    pub fn is_tls(&self) -> bool {
        self.roots.is_some()
    }

    /// The file of certificates TLS trusts, if the connection uses TLS.
    pub fn roots(&self) -> Option<&Path> {
        self.roots.as_deref()
    }

    /// Whether every host is a Unix socket or a loopback address.
    pub fn is_local(&self) -> bool {
        self.local
    }

    /// The store's name in messages: `postgres://user@host:port/db`, never with a password.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// What an operator should be told before connecting: the connection may cross a network in
    /// clear text (records, evidence, the password). `None` for TLS required, and for a local server.
    pub fn warning(&self) -> Option<String> {
        if self.local {
            return None;
        }
        match self.config.get_ssl_mode() {
            SslMode::Require => None,
            SslMode::Prefer => Some(format!(
                "{}: sslmode=prefer: if the server (or anything between) answers that it has no TLS, \
                 the session is clear text; drop sslmode=prefer to require TLS",
                self.label
            )),
            _ => Some(format!(
                "{}: the connection is clear text: records, evidence and the password cross the network \
                 unencrypted; give --pg-ca-file FILE (the certificates to trust), or sslmode=require to \
                 trust the system's",
                self.label
            )),
        }
    }
}

/// The `sslmode` a connection string asks for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Disable,
    Prefer,
    /// `require`, `verify-ca`, `verify-full`: TLS, checked.
    Require,
}

/// The `sslmode` of `conninfo` (`None` if it names none), and the connection string tokio-postgres
/// can parse (it knows no `verify-*`; they are its `require`, checked).
fn sslmode(conninfo: &str) -> Result<(Option<Mode>, String), String> {
    let mut mode = None;
    let mut parsable = String::with_capacity(conninfo.len());
    let mut rest = conninfo;
    while let Some(at) = rest.find("sslmode=") {
        let starts_pair = at == 0 || rest[..at].ends_with(['?', '&', ' ', '\t']);
        let (before, after) = rest.split_at(at + "sslmode=".len());
        parsable.push_str(before);
        let end = after.find(['&', ' ', '\t', '#']).unwrap_or(after.len());
        let value = &after[..end];
        if starts_pair {
            let (said, as_parsed) = match value.trim_matches('\'') {
                "disable" => (Mode::Disable, "disable"),
                "prefer" => (Mode::Prefer, "prefer"),
                "require" => (Mode::Require, "require"),
                "verify-ca" | "verify-full" => (Mode::Require, "require"),
                other => {
                    return Err(format!(
                        "{}: sslmode={other} is not one this build knows: say disable, prefer, require \
                         or verify-full",
                        redact(conninfo)
                    ));
                }
            };
            mode = Some(said);
            parsable.push_str(as_parsed);
        } else {
            parsable.push_str(value);
        }
        rest = &after[end..];
    }
    parsable.push_str(rest);
    Ok((mode, parsable))
}

/// The client configuration of a TLS connection: rustls on ring, trusting the PEM certificates in
/// `roots`.
#[cfg(feature = "tls")]
pub(crate) fn client_config(roots: &Path) -> Result<rustls::ClientConfig, String> {
    use rustls::pki_types::{CertificateDer, pem::PemObject};
    let mut store = rustls::RootCertStore::empty();
    let certs = CertificateDer::pem_file_iter(roots)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("the certificates to trust, {}: {e}", roots.display()))?;
    let (added, _) = store.add_parsable_certificates(certs);
    if added == 0 {
        return Err(format!("the certificates to trust, {}: none in it", roots.display()));
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(store)
        .with_no_client_auth();
    Ok(config)
}

/// Every host a Unix socket or a loopback address (by name `localhost`, or by address).
fn is_local(config: &Config) -> bool {
    let addrs = config.get_hostaddrs();
    if !addrs.is_empty() {
        return addrs.iter().all(|addr| addr.is_loopback());
    }
    // No host: libpq's default, the local socket.
    config.get_hosts().iter().all(|host| match host {
        Host::Tcp(name) => {
            let name = name.trim_start_matches('[').trim_end_matches(']');
            name.eq_ignore_ascii_case("localhost")
                || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
        }
        #[cfg(unix)]
        Host::Unix(_) => true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(conninfo: &str, ca: bool) -> Result<Transport, String> {
        Transport::plan(conninfo, ca.then_some(Path::new("/tmp/ca.pem")))
    }

    #[test]
    fn certificates_given_mean_tls_checked_unless_the_string_says_prefer() {
        for conninfo in [
            "postgres://ops@db.internal/agents",
            "postgres://ops@db.internal/agents?sslmode=require",
            "postgres://ops@db.internal/agents?sslmode=verify-full",
            "host=db.internal dbname=agents sslmode=verify-ca",
        ] {
            let t = plan(conninfo, true).unwrap();
            assert_eq!(t.config.get_ssl_mode(), SslMode::Require, "{conninfo}");
            assert_eq!(t.roots(), Some(Path::new("/tmp/ca.pem")));
            assert!(t.warning().is_none(), "{conninfo}");
        }
        let t = plan("postgres://ops@db.internal/agents?sslmode=prefer", true).unwrap();
        assert_eq!(t.config.get_ssl_mode(), SslMode::Prefer);
        assert!(t.warning().unwrap().contains("sslmode=prefer"));
    }

    #[test]
    fn no_certificates_mean_clear_text_said_off_this_host_or_the_systems_when_required() {
        let t = plan("postgres://ops:pw@db.internal/agents", false).unwrap();
        assert!(!t.is_tls());
        let warning = t.warning().unwrap();
        assert!(warning.contains("clear text") && warning.contains("--pg-ca-file"), "{warning}");
        assert!(!warning.contains("pw"), "{warning}");
        for local in [
            "postgres://ops@localhost/agents",
            "postgres://ops@127.0.0.1:5433/agents?sslmode=disable",
            "postgres://ops@[::1]/agents",
            "host=/run/postgresql dbname=agents",
            "dbname=agents",
            "host=db.internal hostaddr=127.0.0.1 dbname=agents",
        ] {
            let t = plan(local, false).unwrap();
            assert!(!t.is_tls() && t.is_local() && t.warning().is_none(), "{local}: {t:?}");
        }
        let t = plan("postgres://ops@db.internal/agents?sslmode=require", false).unwrap();
        assert!(t.is_tls() && t.warning().is_none());
        assert!(t.roots().unwrap().to_string_lossy().contains("cert"), "{t:?}");
        // Two hosts, one of them remote: not local.
        assert!(!plan("host=localhost,db.internal dbname=agents", false).unwrap().is_local());
    }

    #[test]
    fn contradictions_and_unknown_modes_are_refused_without_the_password() {
        let why = plan("postgres://ops:pw@db/agents?sslmode=disable", true).unwrap_err();
        assert!(why.contains("sslmode=disable") && !why.contains("pw@"), "{why}");
        let why = plan("postgres://ops:pw@db/agents?sslmode=allow", false).unwrap_err();
        assert!(
            why.contains("sslmode=allow") && why.contains("verify-full") && !why.contains("pw@"),
            "{why}"
        );
        // A word that merely ends in `sslmode=` is not the parameter.
        let t = plan("host=db dbname=agents application_name=xsslmode=disable", true).unwrap();
        assert!(t.is_tls());
    }
}
