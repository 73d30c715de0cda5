//! A throwaway PostgreSQL server for tests (feature `testing`), started from the system's binaries.
//!
//! [`PgServer::start`] runs `initdb` on a new temporary directory and starts the server with `pg_ctl`,
//! listening on a Unix socket in that directory only (no TCP port is opened, so servers of parallel
//! test runs never meet). When the process runs as root, the server runs as the `postgres` user, as
//! PostgreSQL requires. Dropping the [`PgServer`] stops it and removes the directory;
//! [`PgServer::shared`] starts one per process, removed by a watchdog once the process exits.
//!
//! The binaries are looked up in `TOOL_CONTRACT_PG_BIN` when set, then on `PATH`, then in
//! `/usr/lib/postgresql/*/bin` (the newest version first).
//!
//! ```no_run
//! use tool_contract_postgres::PgJournal;
//! use tool_contract_postgres::testing::PgServer;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = PgServer::shared()?;
//! let journal = PgJournal::connect(&server.database("my_test").await?).await?;
//! # let _ = journal; Ok(()) }
//! ```

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio_postgres::NoTls;

/// Why a throwaway server could not be had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerError {
    /// PostgreSQL's binaries (`initdb`, `pg_ctl`) were not found.
    NotInstalled {
        /// Where they were looked for.
        searched: Vec<PathBuf>,
    },
    /// They were found, and failed.
    Failed(String),
}

impl fmt::Display for ServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerError::NotInstalled { searched } => {
                let searched: Vec<String> = searched.iter().map(|p| p.display().to_string()).collect();
                write!(
                    f,
                    "PostgreSQL is not installed (no initdb and pg_ctl in {}); install it with \
                     `apt-get install postgresql`, or set TOOL_CONTRACT_PG_BIN to the directory holding them",
                    searched.join(", ")
                )
            }
            ServerError::Failed(why) => write!(f, "the throwaway PostgreSQL server failed: {why}"),
        }
    }
}

impl std::error::Error for ServerError {}

/// A PostgreSQL server of its own in a temporary directory, for tests.
#[derive(Debug)]
pub struct PgServer {
    dir: PathBuf,
    bin: PathBuf,
    port: u16,
    /// `Some("postgres")` when this process runs as root.
    run_as: Option<&'static str>,
    /// Also listening on 127.0.0.1 with TLS, on the certificate `tls.crt` of its directory.
    tls: bool,
}

static SERIAL: AtomicU64 = AtomicU64::new(0);

impl PgServer {
    /// Find the binaries, create a cluster in a new temporary directory and start it.
    pub fn start() -> Result<PgServer, ServerError> {
        let bin = find_binaries()?;
        let root = std::fs::metadata("/proc/self").map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0);
        let run_as = matches!(root, Ok(true)).then_some("postgres");
        let port = free_port()?;
        let dir = std::env::temp_dir().join(format!(
            "tool-contract-pg-{}-{}",
            std::process::id(),
            SERIAL.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| failed(format!("cannot create {}: {e}", dir.display())))?;
        let server = PgServer { dir, bin, port, run_as, tls: false };
        if let Some(user) = run_as {
            server.run(Command::new("chown").arg("-R").arg(format!("{user}:")).arg(&server.dir))?;
        }
        let mut initdb = server.command("initdb");
        initdb.args(["-D"]).arg(server.data()).args([
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--locale=C",
            "-N",
        ]);
        server.run(&mut initdb)?;
        server.start_again()?;
        Ok(server)
    }

    /// A server like [`PgServer::start`]'s that also listens on 127.0.0.1 with TLS required there, on a
    /// self-signed certificate for `localhost` and `127.0.0.1` made with the `openssl` command (which
    /// PostgreSQL's packages depend on): [`PgServer::tls_certificate`] is its PEM file, which a client
    /// trusts, and [`PgServer::tcp_conninfo`] reaches it.
    pub fn start_tls() -> Result<PgServer, ServerError> {
        let mut server = PgServer::start()?;
        server.stop()?;
        let (crt, key) = (server.dir.join("tls.crt"), server.dir.join("tls.key"));
        let mut openssl = Command::new("openssl");
        openssl
            .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=localhost"])
            .args(["-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"])
            // A certificate for the server itself, not an authority: what a client that trusts it accepts.
            .args(["-addext", "basicConstraints=critical,CA:FALSE", "-keyout"])
            .arg(&key)
            .arg("-out")
            .arg(&crt);
        server
            .run(&mut openssl)
            .map_err(|e| failed(format!("cannot make a certificate with openssl: {e}")))?;
        if let Some(user) = server.run_as {
            server.run(Command::new("chown").arg(format!("{user}:")).arg(&crt).arg(&key))?;
        }
        server.run(Command::new("chmod").arg("600").arg(&key))?;
        // TLS only on TCP (a Unix socket has none): require it there.
        let hba = "local all all trust\nhostssl all all 127.0.0.1/32 trust\nhostnossl all all 127.0.0.1/32 reject\n";
        std::fs::write(server.data().join("pg_hba.conf"), hba)
            .map_err(|e| failed(format!("cannot write pg_hba.conf: {e}")))?;
        server.tls = true;
        server.start_again()?;
        Ok(server)
    }

    /// The PEM certificate a [`PgServer::start_tls`] server presents.
    pub fn tls_certificate(&self) -> PathBuf {
        self.dir.join("tls.crt")
    }

    /// The connection string of database `dbname` over TCP on 127.0.0.1 (with TLS on a
    /// [`PgServer::start_tls`] server).
    pub fn tcp_conninfo(&self, dbname: &str) -> String {
        format!("host=127.0.0.1 port={} user=postgres dbname={dbname}", self.port)
    }

    /// One server for the whole process, started on first use. It outlives every test of the process
    /// and is stopped and removed by a watchdog once the process exits (statics are never dropped).
    pub fn shared() -> Result<&'static PgServer, ServerError> {
        static SHARED: OnceLock<Result<PgServer, ServerError>> = OnceLock::new();
        SHARED
            .get_or_init(|| {
                let server = PgServer::start()?;
                server.watch()?;
                Ok(server)
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The connection string of database `dbname` on this server.
    pub fn conninfo(&self, dbname: &str) -> String {
        format!("host={} port={} user=postgres dbname={dbname}", self.dir.display(), self.port)
    }

    /// A new, empty database `name` (letters, digits and `_`), dropped first if it exists; its
    /// connection string.
    pub async fn database(&self, name: &str) -> Result<String, ServerError> {
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(failed(format!("{name:?} is not a plain database name")));
        }
        let (client, connection) = tokio_postgres::connect(&self.conninfo("postgres"), NoTls)
            .await
            .map_err(|e| failed(format!("cannot connect: {e}")))?;
        let connection = tokio::spawn(connection);
        // Two statements apart: neither may run inside the implicit transaction of a multi-statement query.
        let mut created =
            client.batch_execute(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)")).await;
        if created.is_ok() {
            created = client.batch_execute(&format!("CREATE DATABASE \"{name}\"")).await;
        }
        drop(client);
        let _ = connection.await;
        created.map_err(|e| failed(format!("cannot create database {name}: {e}")))?;
        Ok(self.conninfo(name))
    }

    /// Stop the server (fast shutdown: sessions are disconnected).
    pub fn stop(&self) -> Result<(), ServerError> {
        let mut stop = self.command("pg_ctl");
        stop.arg("-D").arg(self.data()).args(["-m", "fast", "-w", "stop"]);
        self.run(&mut stop)
    }

    /// Start the server again after [`PgServer::stop`], on the same socket and data.
    pub fn start_again(&self) -> Result<(), ServerError> {
        let mut options = format!(
            "-k '{}' -h '' -p {} -c max_connections=300 -c shared_buffers=32MB",
            self.dir.display(),
            self.port
        );
        if self.tls {
            options = format!(
                "-k '{}' -h 127.0.0.1 -p {} -c max_connections=300 -c shared_buffers=32MB -c ssl=on \
                 -c ssl_cert_file='{}' -c ssl_key_file='{}'",
                self.dir.display(),
                self.port,
                self.dir.join("tls.crt").display(),
                self.dir.join("tls.key").display()
            );
        }
        let mut start = self.command("pg_ctl");
        start
            .arg("-D")
            .arg(self.data())
            .arg("-l")
            .arg(self.dir.join("server.log"))
            .args(["-w", "-t", "60", "-o", &options, "start"]);
        self.run(&mut start)
    }

    /// The directory of the binaries used.
    pub fn bin_dir(&self) -> &Path {
        &self.bin
    }

    /// The server's log so far (for a failing test's message).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// `program` of the PostgreSQL binaries, as the server's user.
    fn command(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        match self.run_as {
            Some(user) => {
                let mut command = Command::new("runuser");
                command.args(["-u", user, "--"]).arg(path);
                command
            }
            None => Command::new(path),
        }
    }

    fn run(&self, command: &mut Command) -> Result<(), ServerError> {
        let output = command
            .stdin(Stdio::null())
            .output()
            .map_err(|e| failed(format!("cannot run {command:?}: {e}")))?;
        if output.status.success() {
            return Ok(());
        }
        Err(failed(format!(
            "{command:?} exited with {}: {}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )))
    }

    /// A shell that waits for this process to exit, then stops the server and removes its directory.
    fn watch(&self) -> Result<(), ServerError> {
        let mut stop = vec![self.bin.join("pg_ctl").display().to_string()];
        if let Some(user) = self.run_as {
            stop.splice(0..0, ["runuser".to_owned(), "-u".to_owned(), user.to_owned(), "--".to_owned()]);
        }
        let script = format!(
            "while kill -0 {pid} 2>/dev/null; do sleep 0.5; done; {stop} -D '{data}' -m immediate -w stop; rm -rf '{dir}'",
            pid = std::process::id(),
            stop = stop.join(" "),
            data = self.data().display(),
            dir = self.dir.display(),
        );
        Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map(drop)
            .map_err(|e| failed(format!("cannot start the watchdog: {e}")))
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        let mut stop = self.command("pg_ctl");
        stop.arg("-D").arg(self.data()).args(["-m", "immediate", "-w", "stop"]);
        let _ = stop.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn failed(why: String) -> ServerError {
    ServerError::Failed(why)
}

/// A port number nobody listens on now: names the server's socket file (no TCP port is opened).
fn free_port() -> Result<u16, ServerError> {
    let listener =
        std::net::TcpListener::bind(("127.0.0.1", 0)).map_err(|e| failed(format!("no free port: {e}")))?;
    listener.local_addr().map(|a| a.port()).map_err(|e| failed(format!("no free port: {e}")))
}

/// The directory holding `initdb` and `pg_ctl`.
fn find_binaries() -> Result<PathBuf, ServerError> {
    let has_both = |dir: &Path| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file();
    let mut searched = Vec::new();
    if let Some(dir) = std::env::var_os("TOOL_CONTRACT_PG_BIN") {
        let dir = PathBuf::from(dir);
        if has_both(&dir) {
            return Ok(dir);
        }
        searched.push(dir);
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            if has_both(&dir) {
                // A PATH entry of symlinks (Debian's /usr/local/bin ones): the real directory, so that
                // initdb finds the server binary beside it.
                let real = std::fs::canonicalize(dir.join("initdb"))
                    .ok()
                    .and_then(|p| p.parent().map(Path::to_path_buf))
                    .filter(|real| has_both(real));
                return Ok(real.unwrap_or(dir));
            }
        }
        searched.push(PathBuf::from("$PATH"));
    }
    let root = Path::new("/usr/lib/postgresql");
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse::<u32>().ok()?;
            Some((version, entry.path().join("bin")))
        })
        .collect();
    versions.sort();
    if let Some((_, dir)) = versions.into_iter().rev().find(|(_, dir)| has_both(dir)) {
        return Ok(dir);
    }
    searched.push(root.join("*/bin"));
    Err(ServerError::NotInstalled { searched })
}
