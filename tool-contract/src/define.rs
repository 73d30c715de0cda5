//! A tool as a model sees it: its name, description, the JSON Schema of its arguments and of its
//! report, and the hints its effect kind implies; written for MCP, OpenAI and Anthropic.
//!
//! The `#[tool]` attribute builds a [`Definition`] for every tool (see [`crate::toolbox`]); a tool
//! written by hand builds one with [`Definition::new`] and [`Params`].
//!
//! ```
//! use tool_contract::effect::EffectKind;
//! use tool_contract::spec::ToolSpec;
//! use tool_contract::define::{Definition, Format, Params};
//!
//! const SPEC: ToolSpec = ToolSpec::new("read_price", EffectKind::Read);
//! let mut params = Params::new();
//! params.param::<String>("sku", Some("the stock-keeping unit to price"), true);
//! let definition = Definition::new(&SPEC, "Read the price of one item.", params).output::<u64>();
//!
//! let mcp = definition.to_format(Format::Mcp);
//! assert_eq!(mcp["name"], "read_price");
//! assert_eq!(mcp["inputSchema"]["required"][0], "sku");
//! assert_eq!(mcp["annotations"]["readOnlyHint"], true);
//! ```

mod strict;

use schemars::JsonSchema;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde::{Serialize, Serializer};
use serde_json::{Map, Value, json};

use crate::effect::EffectKind;
use crate::spec::{Dedupe, ToolSpec};

pub use strict::NotStrict;

/// The dialect every schema here is written in.
pub const JSON_SCHEMA_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

/// The key under which the effect kind travels in MCP `_meta` (our prefix, per the MCP rules for
/// `_meta` keys).
pub const EFFECT_META_KEY: &str = "dev.tool-contract/effect";

/// Who the definition is written for.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// The MCP `Tool` object: `name`, `description`, `inputSchema`, `outputSchema`, `annotations`.
    Mcp,
    /// An OpenAI `tools` entry for function calling, strict when the schema allows it.
    OpenAi,
    /// An Anthropic `tools` entry, strict when the schema allows it.
    Anthropic,
}

impl Format {
    /// Every format.
    pub const ALL: [Format; 3] = [Format::Mcp, Format::OpenAi, Format::Anthropic];

    /// `mcp`, `openai` or `anthropic`.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Mcp => "mcp",
            Format::OpenAi => "openai",
            Format::Anthropic => "anthropic",
        }
    }
}

impl std::str::FromStr for Format {
    type Err = String;

    fn from_str(text: &str) -> Result<Format, String> {
        Format::ALL
            .into_iter()
            .find(|format| format.as_str() == text)
            .ok_or_else(|| format!("`{text}` is not a format; use mcp, openai or anthropic"))
    }
}

/// The MCP tool annotations an effect kind implies. They never contradict the kind: a `send` is never
/// announced idempotent, a `money` or `destructive` tool always destructive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// The tool changes nothing.
    pub read_only_hint: bool,
    /// The tool may destroy or overwrite, or move money (`None` on a read, where it means nothing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Calling it twice with the same arguments has no further effect (`None` on a read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
}

impl Annotations {
    /// The hints of a tool of kind `effect` whose duplicates are caught by `dedupe`.
    pub const fn of(effect: EffectKind, dedupe: Dedupe) -> Annotations {
        let (read_only, destructive, idempotent) = match effect {
            EffectKind::Read => (true, None, None),
            EffectKind::Create => (false, Some(false), Some(matches!(dedupe, Dedupe::Receiver))),
            EffectKind::Send => (false, Some(false), Some(false)),
            EffectKind::Money | EffectKind::Destructive => (false, Some(true), Some(false)),
        };
        Annotations { read_only_hint: read_only, destructive_hint: destructive, idempotent_hint: idempotent }
    }
}

/// The arguments a model fills, one [`param`](Params::param) each, turned into the input schema.
#[derive(Debug)]
pub struct Params {
    generator: SchemaGenerator,
    properties: Map<String, Value>,
    required: Vec<Value>,
}

impl Default for Params {
    fn default() -> Self {
        Params::new()
    }
}

impl Params {
    /// No arguments yet.
    pub fn new() -> Params {
        Params { generator: generator(), properties: Map::new(), required: Vec::new() }
    }

    /// An argument named `name` of type `T`, with a description for the model; `required` is false
    /// for an `Option` the model may leave out.
    pub fn param<T: JsonSchema>(
        &mut self,
        name: &str,
        description: Option<&str>,
        required: bool,
    ) -> &mut Params {
        let mut schema = self.generator.subschema_for::<T>();
        if let Some(description) = description.map(doc_text).filter(|text| !text.is_empty()) {
            schema.insert("description".to_owned(), Value::String(description));
        }
        self.properties.insert(name.to_owned(), schema.to_value());
        if required {
            self.required.push(Value::String(name.to_owned()));
        }
        self
    }

    /// The input schema: an object of the arguments, nothing else accepted.
    fn into_schema(self) -> Map<String, Value> {
        let mut schema = Value::Object(self.assemble());
        without_numeric_formats(&mut schema);
        match schema {
            Value::Object(schema) => schema,
            _ => Map::new(),
        }
    }

    fn assemble(mut self) -> Map<String, Value> {
        let definitions = self.generator.take_definitions(true);
        let mut schema = Map::new();
        schema.insert("$schema".to_owned(), JSON_SCHEMA_2020_12.into());
        schema.insert("type".to_owned(), "object".into());
        schema.insert("properties".to_owned(), Value::Object(self.properties));
        schema.insert("required".to_owned(), Value::Array(self.required));
        schema.insert("additionalProperties".to_owned(), false.into());
        if !definitions.is_empty() {
            schema.insert("$defs".to_owned(), Value::Object(definitions));
        }
        schema
    }
}

/// Replace the numeric `format`s schemars writes (`uint64`, `int32`, `double`, ...), which JSON Schema
/// 2020-12 does not define and clients warn about, by what every validator understands: the bounds of
/// the integer's width as `minimum` and `maximum` (kept where already stricter); 64-bit and wider
/// widths get no `maximum`, which a JavaScript client could not hold exactly anyway.
pub(crate) fn without_numeric_formats(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            let bounds: Option<(Option<i64>, Option<u64>)> = match map.get("format").and_then(Value::as_str) {
                Some("uint8") => Some((Some(0), Some(u64::from(u8::MAX)))),
                Some("uint16") => Some((Some(0), Some(u64::from(u16::MAX)))),
                Some("uint32") => Some((Some(0), Some(u64::from(u32::MAX)))),
                Some("uint" | "uint64" | "uint128") => Some((Some(0), None)),
                Some("int8") => Some((Some(i64::from(i8::MIN)), Some(u64::from(i8::MAX.unsigned_abs())))),
                Some("int16") => Some((Some(i64::from(i16::MIN)), Some(u64::from(i16::MAX.unsigned_abs())))),
                Some("int32") => Some((Some(i64::from(i32::MIN)), Some(u64::from(i32::MAX.unsigned_abs())))),
                Some("int" | "int64" | "int128" | "float" | "double") => Some((None, None)),
                _ => None,
            };
            if let Some((minimum, maximum)) = bounds {
                map.remove("format");
                if let Some(minimum) = minimum {
                    map.entry("minimum").or_insert(minimum.into());
                }
                if let Some(maximum) = maximum {
                    map.entry("maximum").or_insert(maximum.into());
                }
            }
            map.values_mut().for_each(without_numeric_formats);
        }
        Value::Array(values) => values.iter_mut().for_each(without_numeric_formats),
        _ => {}
    }
}

/// A doc comment as text: each line without the one space `///` leaves, the whole trimmed.
fn doc_text(doc: &str) -> String {
    let lines: Vec<&str> = doc.lines().map(|line| line.strip_prefix(' ').unwrap_or(line)).collect();
    lines.join("\n").trim().to_owned()
}

fn generator() -> SchemaGenerator {
    SchemaSettings::draft2020_12().for_deserialize().into_generator()
}

/// A tool as a model sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Definition {
    name: &'static str,
    description: String,
    effect: EffectKind,
    dedupe: Dedupe,
    floor: std::time::Duration,
    input_schema: Map<String, Value>,
    output_schema: Map<String, Value>,
}

impl Definition {
    /// The definition of the tool `spec`, described by `description`, taking `params`. Its output
    /// schema is that of a `Report<()>` until [`output`](Definition::output) names the value type.
    pub fn new(spec: &ToolSpec, description: &str, params: Params) -> Definition {
        Definition {
            name: spec.name(),
            description: doc_text(description),
            effect: spec.effect(),
            dedupe: spec.get_dedupe(),
            floor: spec.get_deadline_floor(),
            input_schema: params.into_schema(),
            output_schema: report_schema::<()>(),
        }
    }

    /// The output schema: the report's JSON with `value` of type `T`.
    pub fn output<T: JsonSchema + ?Sized>(mut self) -> Definition {
        self.output_schema = report_schema::<T>();
        self
    }

    /// The tool's name, as models call it and the attempt log records it.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// What the tool does, for the model that chooses it.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The tool's effect kind.
    pub fn effect(&self) -> EffectKind {
        self.effect
    }

    /// The least budget an attempt of it may start with ([`ToolSpec::deadline_floor`]).
    pub fn floor(&self) -> std::time::Duration {
        self.floor
    }

    /// The MCP annotations its effect kind implies.
    pub fn annotations(&self) -> Annotations {
        Annotations::of(self.effect, self.dedupe)
    }

    /// The JSON Schema (2020-12) of its arguments: an object, unknown fields refused.
    pub fn input_schema(&self) -> &Map<String, Value> {
        &self.input_schema
    }

    /// The JSON Schema (2020-12) of the report every call of it returns, whatever the outcome.
    pub fn output_schema(&self) -> &Map<String, Value> {
        &self.output_schema
    }

    /// The definition in `format`, ready to serialise into a request or a `tools/list` reply.
    pub fn to_format(&self, format: Format) -> Value {
        match format {
            Format::Mcp => self.mcp(),
            Format::OpenAi => self.openai(),
            Format::Anthropic => self.anthropic(),
        }
    }

    /// The MCP `Tool` object, with the effect kind under `_meta` (`dev.tool-contract/effect`).
    pub fn mcp(&self) -> Value {
        json!({
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
            "outputSchema": self.output_schema,
            "annotations": self.annotations(),
            "_meta": { EFFECT_META_KEY: self.effect.as_str() },
        })
    }

    /// An OpenAI function-calling `tools` entry (`{"type": "function", "function": {...}}`): strict
    /// when [`openai_strict`](Definition::openai_strict) can write the schema, else the plain schema
    /// with `"strict": false`.
    pub fn openai(&self) -> Value {
        let (parameters, strict) = match strict::openai(&self.input_schema) {
            Ok(schema) => (schema, true),
            Err(_) => (self.input_schema.clone(), false),
        };
        openai_entry(self, parameters, strict)
    }

    /// The OpenAI entry in strict mode: every property required (optional ones nullable),
    /// `additionalProperties: false` on every object, no keyword strict mode refuses. An error when
    /// the arguments hold something strict mode cannot express (a map with free keys).
    pub fn openai_strict(&self) -> Result<Value, NotStrict> {
        strict::openai(&self.input_schema).map(|schema| openai_entry(self, schema, true))
    }

    /// An Anthropic `tools` entry: strict when [`anthropic_strict`](Definition::anthropic_strict) can
    /// write the schema, else the plain schema without `strict`.
    pub fn anthropic(&self) -> Value {
        match self.anthropic_strict() {
            Ok(entry) => entry,
            Err(_) => json!({
                "name": self.name,
                "description": self.description,
                "input_schema": self.input_schema,
            }),
        }
    }

    /// The Anthropic entry for strict tool use: `additionalProperties: false` on every object, and
    /// none of the constraints strict tool use refuses. An error when the arguments hold something it
    /// cannot express.
    pub fn anthropic_strict(&self) -> Result<Value, NotStrict> {
        let schema = strict::anthropic(&self.input_schema)?;
        Ok(json!({
            "name": self.name,
            "description": self.description,
            "input_schema": schema,
            "strict": true,
        }))
    }
}

fn openai_entry(definition: &Definition, parameters: Map<String, Value>, strict: bool) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": definition.name,
            "description": definition.description,
            "parameters": parameters,
            "strict": strict,
        }
    })
}

/// Serialises as the MCP `Tool` object.
impl Serialize for Definition {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.mcp().serialize(serializer)
    }
}

/// The JSON Schema of a `Report<T>`.
pub fn report_schema<T: JsonSchema + ?Sized>() -> Map<String, Value> {
    let mut generator = generator();
    let mut value = generator.subschema_for::<T>().to_value();
    without_numeric_formats(&mut value);
    let mut definitions = generator.take_definitions(true);
    definitions.values_mut().for_each(without_numeric_formats);
    definitions.insert("Item".to_owned(), item_schema());
    let Value::Object(mut schema) = json!({
        "$schema": JSON_SCHEMA_2020_12,
        "title": "Report",
        "description": "The report of one tool call. outcome: ok (done), retryable (not done; retry under the \
                        policy), permanent (change something first), unknown (the effect may have landed; \
                        resolve by reading the world). Stop when deadline_left_s is 0 or retry_after_s is \
                        larger than it.",
        "type": "object",
        "properties": {
            "outcome": { "enum": ["ok", "retryable", "permanent", "unknown"] },
            "effect_applied": { "enum": ["yes", "no", "unknown", "partial"] },
            "attempt_id": { "type": "string" },
            "idempotency_key": { "type": "string", "pattern": "^[0-9a-f]{32}$" },
            "retry_after_s": { "type": ["integer", "null"], "minimum": 0 },
            "deadline_left_s": { "type": "integer", "minimum": 0 },
            "message": { "type": "string" },
            "value": { "anyOf": [value, { "type": "null" }] },
            "items": { "type": "array", "items": { "$ref": "#/$defs/Item" } },
        },
        "required": [
            "outcome", "effect_applied", "attempt_id", "idempotency_key", "retry_after_s",
            "deadline_left_s", "message", "value", "items"
        ],
        "additionalProperties": false,
    }) else {
        unreachable!("a JSON object literal")
    };
    schema.insert("$defs".to_owned(), Value::Object(definitions));
    schema
}

fn item_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "id": { "type": "string" },
            "outcome": { "enum": ["ok", "retryable", "permanent", "unknown"] },
            "applied": { "enum": ["yes", "no", "unknown"] },
            "reason": { "type": ["string", "null"] },
        },
        "required": ["id", "outcome", "applied", "reason"],
        "additionalProperties": false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 23, item 9: no integer or float `format` a 2020-12 validator does not define, in any
    /// of the three formats, for every width; the bounds of the width instead.
    #[test]
    fn schemas_carry_bounds_not_formats_clients_do_not_know() {
        const SPEC: ToolSpec = ToolSpec::new("sizes", EffectKind::Read);
        let mut params = Params::new();
        params
            .param::<u8>("u8", None, true)
            .param::<u16>("u16", None, true)
            .param::<u32>("u32", None, true)
            .param::<u64>("u64", None, true)
            .param::<usize>("usize", None, true)
            .param::<u128>("u128", None, true)
            .param::<i8>("i8", None, true)
            .param::<i32>("i32", None, true)
            .param::<i64>("i64", None, true)
            .param::<f32>("f32", None, true)
            .param::<f64>("f64", None, true)
            .param::<Option<u16>>("maybe", None, false)
            .param::<std::num::NonZeroU32>("nonzero", None, true)
            .param::<Vec<u64>>("list", None, true);
        let definition = Definition::new(&SPEC, "Sizes.", params).output::<Vec<u32>>();
        for format in Format::ALL {
            let text = definition.to_format(format).to_string();
            for unknown in ["uint", "int8", "int16", "int32", "int64", "int128", "double", "float"] {
                assert!(
                    !text.contains(&format!("\"format\":\"{unknown}")),
                    "{format:?} says {unknown}: {text}"
                );
            }
        }
        let input = Value::Object(definition.input_schema().clone());
        let bounds = |name: &str| {
            (input["properties"][name]["minimum"].clone(), input["properties"][name]["maximum"].clone())
        };
        assert_eq!(bounds("u8"), (json!(0), json!(255)));
        assert_eq!(bounds("u16"), (json!(0), json!(65535)));
        assert_eq!(bounds("u32"), (json!(0), json!(4294967295u64)));
        assert_eq!(bounds("u64"), (json!(0), Value::Null));
        assert_eq!(bounds("i8"), (json!(-128), json!(127)));
        assert_eq!(bounds("i32"), (json!(-2147483648i64), json!(2147483647)));
        assert_eq!(bounds("i64"), (Value::Null, Value::Null));
        assert_eq!(input["properties"]["nonzero"]["minimum"], json!(1), "a stricter bound is kept");
        assert_eq!(input["properties"]["list"]["items"]["minimum"], json!(0));
    }

    #[test]
    fn annotations_follow_the_effect_kind() {
        let hints = |effect, dedupe| {
            let a = Annotations::of(effect, dedupe);
            (a.read_only_hint, a.destructive_hint, a.idempotent_hint)
        };
        assert_eq!(hints(EffectKind::Read, Dedupe::Probe), (true, None, None));
        assert_eq!(hints(EffectKind::Create, Dedupe::Probe), (false, Some(false), Some(false)));
        assert_eq!(hints(EffectKind::Create, Dedupe::Receiver), (false, Some(false), Some(true)));
        assert_eq!(hints(EffectKind::Send, Dedupe::Probe), (false, Some(false), Some(false)));
        assert_eq!(hints(EffectKind::Money, Dedupe::Probe), (false, Some(true), Some(false)));
        assert_eq!(hints(EffectKind::Destructive, Dedupe::Probe), (false, Some(true), Some(false)));
        let read = serde_json::to_value(Annotations::of(EffectKind::Read, Dedupe::Probe)).unwrap();
        assert_eq!(read, json!({ "readOnlyHint": true }));
    }

    #[test]
    fn input_schema_lists_arguments_in_order_optional_ones_not_required() {
        let mut params = Params::new();
        params.param::<String>("thread", Some("the thread to post to"), true);
        params.param::<Option<u32>>("priority", None, false);
        let spec = ToolSpec::new("post_notice", EffectKind::Send);
        let definition = Definition::new(&spec, "  Post a notice.\n", params).output::<u64>();
        let input = Value::Object(definition.input_schema().clone());
        assert_eq!(input["type"], "object");
        assert_eq!(input["additionalProperties"], false);
        assert_eq!(input["required"], json!(["thread"]));
        assert_eq!(
            input["properties"]["thread"],
            json!({ "type": "string", "description": "the thread to post to" })
        );
        assert_eq!(definition.description(), "Post a notice.");
        let output = Value::Object(definition.output_schema().clone());
        assert_eq!(output["properties"]["value"]["anyOf"][1], json!({ "type": "null" }));
        assert_eq!(output["required"].as_array().unwrap().len(), 9);
    }

    #[test]
    fn formats_parse_by_name() {
        for format in Format::ALL {
            assert_eq!(format.as_str().parse::<Format>(), Ok(format));
        }
        assert!("json".parse::<Format>().unwrap_err().contains("mcp, openai or anthropic"));
    }
}
