//! Serving the console over TLS (feature `tls`): rustls on ring, from PEM files.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// A TLS configuration for [`crate::Options::tls`] from PEM files: `cert` holds the certificate
/// chain (the console's certificate first), `key` its private key (PKCS#8, PKCS#1 or SEC1).
pub fn server_config(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, String> {
    let chain = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("`--tls-cert {}`: {e}", cert.display()))?;
    if chain.is_empty() {
        return Err(format!("`--tls-cert {}`: no certificate in it", cert.display()));
    }
    let private =
        PrivateKeyDer::from_pem_file(key).map_err(|e| format!("`--tls-key {}`: {e}", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(chain, private)
        .map_err(|e| format!("`--tls-cert {}` and `--tls-key {}`: {e}", cert.display(), key.display()))?;
    Ok(Arc::new(config))
}
