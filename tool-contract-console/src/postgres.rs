//! A console over a fleet's store in PostgreSQL (feature `postgres`): opening the store, over TLS
//! when asked, and binding a console to it.

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

    /// Open a fleet's store in PostgreSQL for a console (feature `postgres`), reached as `transport`
    /// says ([`Transport::plan`](tool_contract_postgres::Transport::plan): TLS from the connection
    /// string's `sslmode` and the certificates to trust, which needs the feature `postgres-tls`). A
    /// read-only console (`read_only`) checks the store's schema and never changes it: a database
    /// without the attempt log, or with an older schema, is refused with a message saying so, where a
    /// console that may write migrates it as a worker does.
    #[cfg(feature = "postgres")]
    pub async fn connect_postgres(
        transport: &tool_contract_postgres::Transport,
        read_only: bool,
    ) -> Result<tool_contract_postgres::PgJournal, String> {
        use tool_contract_postgres::{PgJournal, PgOptions};
        let options = PgOptions::default().read_only(read_only);
        PgJournal::connect_over(transport, options).await.map_err(|e| e.to_string())
    }
}
