//! Connection strings as they may be shown: never with their password.

use tokio_postgres::Config;
use tokio_postgres::config::Host;

/// `conninfo` with every password in it replaced by `***`, for messages and logs.
///
/// Both forms PostgreSQL accepts are handled: a URL (`postgres://user:secret@host/db`, and a
/// `password=` query parameter) and `key=value` pairs (`host=db password='it''s secret'`). A string of
/// neither form is returned with anything after `password` masked.
///
/// ```
/// use tool_contract_postgres::redact;
///
/// assert_eq!(redact("postgres://agent:s3cret@db:5432/fleet"), "postgres://agent:***@db:5432/fleet");
/// assert_eq!(redact("host=db password=s3cret dbname=fleet"), "host=db password=*** dbname=fleet");
/// ```
pub fn redact(conninfo: &str) -> String {
    let trimmed = conninfo.trim_start();
    if trimmed.starts_with("postgres://") || trimmed.starts_with("postgresql://") {
        redact_url(conninfo)
    } else {
        redact_pairs(conninfo)
    }
}

/// The name a store goes by in messages: `postgres://user@host:port/db`, built from the parsed
/// configuration, so it holds no password whatever form the connection string had.
pub(crate) fn label(config: &Config) -> String {
    let user = config.get_user().unwrap_or("");
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, host)| {
            let port = config.get_ports().get(i).or(config.get_ports().first()).copied().unwrap_or(5432);
            match host {
                Host::Tcp(name) => format!("{name}:{port}"),
                #[cfg(unix)]
                Host::Unix(path) => format!("[{}]:{port}", path.display()),
            }
        })
        .collect();
    let db = config.get_dbname().unwrap_or(user);
    let at = if user.is_empty() { String::new() } else { format!("{user}@") };
    format!("postgres://{at}{}/{db}", hosts.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_survive_redaction() {
        let cases = [
            ("postgres://agent:s3cret@db:5432/fleet", "postgres://agent:***@db:5432/fleet"),
            ("postgresql://agent:s3:cr@t@db/fleet", "postgresql://agent:***@db/fleet"),
            (
                "postgres://agent@db/fleet?password=s3cret&sslmode=require",
                "postgres://agent@db/fleet?password=***&sslmode=require",
            ),
            ("postgres://db/fleet", "postgres://db/fleet"),
            ("host=db password=s3cret dbname=fleet", "host=db password=*** dbname=fleet"),
            ("host=db password = 's3 cr\\'et' dbname=fleet", "host=db password = *** dbname=fleet"),
            ("password='it''s' user=a", "password=*** user=a"),
            ("host=db passwordless=1 user=a", "host=db passwordless=1 user=a"),
            ("host=db password=", "host=db password=***"),
        ];
        for (given, shown) in cases {
            let redacted = redact(given);
            assert_eq!(redacted, shown, "{given}");
            assert!(!redacted.contains("s3"), "{redacted}");
        }
    }

    #[test]
    fn the_label_names_user_host_and_database_only() {
        let config: Config = "host=db1 port=6543 user=agent password=s3cret dbname=fleet".parse().unwrap();
        assert_eq!(label(&config), "postgres://agent@db1:6543/fleet");
        let config: Config = "postgres://agent:s3cret@db1/fleet".parse().unwrap();
        assert_eq!(label(&config), "postgres://agent@db1:5432/fleet");
    }
}

fn redact_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|at| at + 3) else {
        return redact_pairs(url);
    };
    let rest = &url[scheme_end..];
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let mut out = String::with_capacity(url.len());
    out.push_str(&url[..scheme_end]);
    // The user info ends at the last `@` of the authority; its password follows the first `:`.
    match authority.rfind('@') {
        Some(at) => {
            let userinfo = &authority[..at];
            match userinfo.find(':') {
                Some(colon) => {
                    out.push_str(&userinfo[..colon]);
                    out.push_str(":***");
                }
                None => out.push_str(userinfo),
            }
            out.push_str(&authority[at..]);
        }
        None => out.push_str(authority),
    }
    let tail = &rest[authority_end..];
    match tail.find('?') {
        Some(q) => {
            out.push_str(&tail[..=q]);
            let params: Vec<String> = tail[q + 1..]
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((key, _)) if key.eq_ignore_ascii_case("password") => format!("{key}=***"),
                    _ => pair.to_owned(),
                })
                .collect();
            out.push_str(&params.join("&"));
        }
        None => out.push_str(tail),
    }
    out
}

fn redact_pairs(conninfo: &str) -> String {
    let mut out = String::with_capacity(conninfo.len());
    let mut rest = conninfo;
    while let Some(at) = rest.find("password") {
        let before_ok = at == 0 || rest[..at].ends_with(|c: char| c.is_whitespace());
        out.push_str(&rest[..at + "password".len()]);
        rest = &rest[at + "password".len()..];
        let after = rest.trim_start();
        if !before_ok || !after.starts_with('=') {
            continue;
        }
        let skipped = rest.len() - after.len();
        out.push_str(&rest[..skipped]);
        out.push('=');
        let value = after[1..].trim_start();
        out.push_str(&after[1..after.len() - value.len()]);
        out.push_str("***");
        rest = &value[value_len(value)..];
    }
    out.push_str(rest);
    out
}

/// The length of a `key=value` value at the start of `s`: quoted (`'..'`, with `\'` and `''` inside) or
/// up to the next whitespace.
fn value_len(s: &str) -> usize {
    let bytes = s.as_bytes();
    if bytes.first() != Some(&b'\'') {
        return s.find(char::is_whitespace).unwrap_or(s.len());
    }
    let mut i = 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'\'' if bytes.get(i + 1) == Some(&b'\'') => i += 2,
            b'\'' => return i + 1,
            _ => i += 1,
        }
    }
    s.len()
}

#[cfg(test)]
mod forms {
    use super::redact;

    #[test]
    fn a_password_never_prints() {
        for (given, shown) in [
            (
                "postgres://agent:s3cr:et@db.internal:5432/agents",
                "postgres://agent:***@db.internal:5432/agents",
            ),
            ("postgresql://agent:pw@db/x?sslmode=require", "postgresql://agent:***@db/x?sslmode=require"),
            ("postgres://agent@db/x", "postgres://agent@db/x"),
            ("postgres://db/x", "postgres://db/x"),
            ("/var/lib/agent/attempts.log", "/var/lib/agent/attempts.log"),
        ] {
            assert_eq!(redact(given), shown);
        }
    }
}
