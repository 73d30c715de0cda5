use std::fmt::Display;

use tool_contract::{Class, tool};

/// Describe anything that displays.
#[tool(effect = "read")]
pub async fn describe(note: impl Display + Clone) -> Result<String, Class> {
    Ok(note.to_string())
}

fn main() {}
