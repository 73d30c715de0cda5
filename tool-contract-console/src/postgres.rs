//! A console over a fleet's store in PostgreSQL (feature `postgres`): opening the store, over TLS
//! when asked, and binding a console to it.

use std::path::Path;
use std::sync::Arc;

use crate::{Console, Options, Running};

impl Console {
    /// Bind a console over a fleet's store in PostgreSQL (feature `postgres`): [`Console::bind_store`]
    /// with the store's [`PgReader`](tool_contract_postgres::PgReader); every page is a few queries.
    #[cfg(feature = "postgres")]
    pub async fn bind_postgres(
        journal: tool_contract_postgres::PgJournal,
        options: Options,
    ) -> Result<Running, String> {
        Console::bind_store(Arc::new(journal.reader()), Arc::new(journal), options).await
    }

    /// Open a fleet's store in PostgreSQL for a console (feature `postgres`). A read-only console
    /// (`read_only`) checks the store's schema and never changes it: a database without the attempt
    /// log, or with an older schema, is refused with a message saying so, where a console that may
    /// write migrates it as a worker does.
    ///
    /// With `ca_file` (PEM certificates to trust, feature `postgres-tls`) the connection is made over
    /// TLS with rustls, which checks the server's certificate and name; the connection string's
    /// `sslmode` says whether TLS is required (`require`) or tried first (`prefer`, the default). A
    /// connection string with `sslmode=require` and no `ca_file` trusts the system's certificates
    /// (`SSL_CERT_FILE`, else `/etc/ssl/certs/ca-certificates.crt`).
    #[cfg(feature = "postgres")]
    pub async fn connect_postgres(
        conninfo: &str,
        read_only: bool,
        ca_file: Option<&Path>,
    ) -> Result<tool_contract_postgres::PgJournal, String> {
        use tool_contract_postgres::{PgJournal, PgOptions};
        let options = PgOptions::default().read_only(read_only);
        let required = conninfo.split(['?', '&', ' ']).any(|p| p.trim() == "sslmode=require");
        let system = std::env::var_os("SSL_CERT_FILE")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| "/etc/ssl/certs/ca-certificates.crt".into());
        let roots = match ca_file {
            Some(file) => Some(file.to_path_buf()),
            None if required => Some(system),
            None => None,
        };
        let opened = match roots {
            None => PgJournal::connect_with(conninfo, options).await,
            #[cfg(feature = "postgres-tls")]
            Some(file) => {
                use rustls::pki_types::{CertificateDer, pem::PemObject};
                use tool_contract_postgres::rustls;
                let mut store = rustls::RootCertStore::empty();
                let certs = CertificateDer::pem_file_iter(&file)
                    .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                    .map_err(|e| format!("the certificates to trust, {}: {e}", file.display()))?;
                let (added, _) = store.add_parsable_certificates(certs);
                if added == 0 {
                    return Err(format!("the certificates to trust, {}: none in it", file.display()));
                }
                let provider = Arc::new(rustls::crypto::ring::default_provider());
                let tls = rustls::ClientConfig::builder_with_provider(provider)
                    .with_safe_default_protocol_versions()
                    .map_err(|e| e.to_string())?
                    .with_root_certificates(store)
                    .with_no_client_auth();
                PgJournal::connect_tls(conninfo, options, tls).await
            }
            #[cfg(not(feature = "postgres-tls"))]
            Some(_) => {
                return Err(
                    "TLS to PostgreSQL needs the feature `postgres-tls` of tool-contract-console".into()
                );
            }
        };
        opened.map_err(|e| e.to_string())
    }
}
