use tool_contract::tool;

#[tool(effect = "read")]
pub struct Price(u64);

fn main() {}
