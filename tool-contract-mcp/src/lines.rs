//! MCP over a pair of byte streams, one JSON-RPC message per line (stdio), answering a message it
//! cannot read with the id it carries.
//!
//! rmcp's own line transport answers well-formed JSON of the wrong shape with `-32600` and a `null`
//! id; a client that sent an id then cannot tell which of its requests failed. This one reads the id
//! when the message has one. What is not JSON at all is ignored, as rmcp and the other SDKs ignore it
//! (answering garbage can start an error storm with a peer that echoes it), and so is an unknown
//! notification, as rmcp does.

use std::borrow::Cow;
use std::future::Future;

use rmcp::RoleServer;
use rmcp::model::{ErrorData, NumberOrString};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::{Transport, async_rw::AsyncRwTransport};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, BufReader};

/// The longest line read: a longer one is dropped whole, and the connection goes on.
pub const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// The server side of a line transport over `read` and `write`.
pub(crate) struct Lines<R: AsyncRead, W: AsyncWrite> {
    read: BufReader<R>,
    /// Where answers go: rmcp's own writer (its reader is never used).
    out: AsyncRwTransport<RoleServer, tokio::io::Empty, W>,
    /// The line read so far: kept across a `receive` dropped mid-line (it is polled in a `select!`).
    line: Vec<u8>,
    /// A line longer than [`MAX_LINE_BYTES`] is being skipped to its end.
    skipping: bool,
}

impl<R, W> Lines<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    pub(crate) fn new(read: R, write: W) -> Self {
        Lines {
            read: BufReader::new(read),
            out: AsyncRwTransport::new(tokio::io::empty(), write),
            line: Vec::new(),
            skipping: false,
        }
    }

    /// The next whole line, without its end; `None` at the end of the stream.
    async fn next_line(&mut self) -> Option<Vec<u8>> {
        loop {
            let room = (MAX_LINE_BYTES + 1).saturating_sub(self.line.len()) as u64;
            let read = (&mut self.read).take(room.max(1)).read_until(b'\n', &mut self.line).await.ok()?;
            let ended = self.line.last() == Some(&b'\n');
            if read == 0 && !ended {
                return None;
            }
            if !ended && self.line.len() <= MAX_LINE_BYTES {
                continue;
            }
            if !ended {
                // Too long: drop what was read and skip to the line's end.
                self.line.clear();
                self.skipping = true;
                continue;
            }
            let mut line = std::mem::take(&mut self.line);
            if std::mem::take(&mut self.skipping) {
                continue;
            }
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Some(line);
        }
    }
}

impl<R, W> Transport<RoleServer> for Lines<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = std::io::Error;

    fn name() -> Cow<'static, str> {
        "tool-contract lines".into()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.out.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let line = self.next_line().await?;
            let line = line.strip_prefix(b"\xef\xbb\xbf".as_slice()).unwrap_or(&line);
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let error = match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(line) {
                Ok(message) => return Some(message),
                Err(error) => error,
            };
            let Ok(value) = serde_json::from_slice::<serde_json::Value>(line) else { continue };
            let id = match value.get("id") {
                Some(serde_json::Value::Number(n)) => n.as_i64().map(NumberOrString::Number),
                Some(serde_json::Value::String(s)) => Some(NumberOrString::String(s.as_str().into())),
                _ => None,
            };
            // A notification rmcp does not know (no id, a method): ignored, as rmcp ignores it.
            if id.is_none() && value.get("method").is_some_and(serde_json::Value::is_string) {
                continue;
            }
            let why = format!("Invalid Request: not a JSON-RPC request or notification ({error})");
            let answer = TxJsonRpcMessage::<RoleServer>::error(ErrorData::invalid_request(why, None), id);
            if self.out.send(answer).await.is_err() {
                return None;
            }
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.out.close()
    }
}

#[cfg(test)]
mod tests {
    /// The figure docs/agent-surface.md quotes.
    #[test]
    fn the_chapter_quotes_the_line_limit() {
        let chapter = include_str!("../../docs/agent-surface.md");
        let quoted = format!("`MAX_LINE_BYTES` ({} MiB)", super::MAX_LINE_BYTES >> 20);
        assert!(chapter.contains(&quoted), "{quoted}");
    }
}
