use tool_contract::tool;

/// What the tool does, for the model.
#[tool(effect = "read")]
pub struct Price(u64);

fn main() {}
