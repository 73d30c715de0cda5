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
    tool_contract::journal::inspect::redact_password(conninfo)
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
