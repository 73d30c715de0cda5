//! The strict variants of an input schema, for providers that constrain decoding to the schema and so
//! accept only a subset of JSON Schema. Each rule is a line of [`Rules`]; a schema that a provider's
//! subset cannot express without changing its meaning is refused with [`NotStrict`], never silently
//! widened.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::{Map, Value};

/// Why an input schema has no strict variant for a provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotStrict {
    /// Where in the schema, as a JSON pointer (`/properties/tags`).
    pub at: String,
    /// What the provider's strict mode cannot express there.
    pub reason: String,
}

impl fmt::Display for NotStrict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.at.is_empty() { "the root" } else { &self.at };
        write!(f, "no strict schema: at {at}, {}", self.reason)
    }
}

impl std::error::Error for NotStrict {}

/// One provider's subset.
struct Rules {
    /// Keywords kept; every other keyword is dropped (a constraint the provider does not enforce is
    /// enforced again when the arguments are decoded).
    keywords: &'static [&'static str],
    /// String formats kept; other formats are dropped.
    formats: &'static [&'static str],
    /// Every property listed in `required`, the optional ones made nullable.
    all_required: bool,
    /// `oneOf` written as `anyOf` (the arguments decode the same for the enums a Rust type produces).
    one_of_as_any_of: bool,
    /// The largest `minItems` kept.
    max_min_items: Option<u64>,
    /// Whether a `$ref` may lead back to itself.
    recursion: bool,
}

const OPENAI: Rules = Rules {
    keywords: &[
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "anyOf",
        "$ref",
        "$defs",
        "description",
        "title",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minItems",
        "maxItems",
    ],
    formats: &["date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"],
    all_required: true,
    one_of_as_any_of: true,
    max_min_items: None,
    recursion: true,
};

const ANTHROPIC: Rules = Rules {
    keywords: &[
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "anyOf",
        "$ref",
        "$defs",
        "description",
        "title",
        "default",
        "pattern",
        "format",
        "minItems",
    ],
    formats: &["date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"],
    all_required: false,
    one_of_as_any_of: true,
    max_min_items: Some(1),
    recursion: false,
};

/// The OpenAI strict variant of `schema`.
pub(super) fn openai(schema: &Map<String, Value>) -> Result<Map<String, Value>, NotStrict> {
    strict(schema, &OPENAI)
}

/// The Anthropic strict variant of `schema`.
pub(super) fn anthropic(schema: &Map<String, Value>) -> Result<Map<String, Value>, NotStrict> {
    strict(schema, &ANTHROPIC)
}

fn strict(schema: &Map<String, Value>, rules: &Rules) -> Result<Map<String, Value>, NotStrict> {
    let mut root = Value::Object(schema.clone());
    if root.get("type").and_then(Value::as_str) != Some("object") {
        return Err(refused("", "the arguments must be one object"));
    }
    if !rules.recursion
        && let Some(at) = recursive_definition(&root)
    {
        return Err(refused(&at, "a type refers to itself, and recursive schemas are not supported"));
    }
    rewrite(&mut root, rules, &mut String::new())?;
    match root {
        Value::Object(map) => Ok(map),
        _ => Err(refused("", "the arguments must be one object")),
    }
}

fn refused(at: &str, reason: &str) -> NotStrict {
    NotStrict { at: at.to_owned(), reason: reason.to_owned() }
}

/// Rewrites one schema in place, then the schemas inside it.
fn rewrite(schema: &mut Value, rules: &Rules, at: &mut String) -> Result<(), NotStrict> {
    let Value::Object(map) = schema else {
        // `true` and `false` schemas say "anything" and "nothing": neither has a strict form.
        return Err(refused(at, "a boolean schema accepts anything or nothing"));
    };
    if rules.one_of_as_any_of
        && let Some(one_of) = map.remove("oneOf")
    {
        map.insert("anyOf".to_owned(), one_of);
    }
    merge_all_of(map, at)?;
    if map.contains_key("patternProperties") || map.contains_key("prefixItems") {
        let what = if map.contains_key("prefixItems") { "a tuple" } else { "a map with patterned keys" };
        return Err(refused(at, &format!("{what} is not supported; use a struct with named fields")));
    }
    close_object(map, rules, at)?;
    if let Some(Value::String(format)) = map.get("format")
        && !rules.formats.contains(&format.as_str())
    {
        map.remove("format");
    }
    if let (Some(cap), Some(min)) = (rules.max_min_items, map.get("minItems").and_then(Value::as_u64))
        && min > cap
    {
        map.remove("minItems");
    }
    map.retain(|key, _| rules.keywords.contains(&key.as_str()));
    rewrite_inside(map, rules, at)
}

/// schemars writes `allOf` of one `$ref` to give a reference siblings; neither provider takes `allOf`
/// with a `$ref`, so the one schema is merged in. `allOf` of several schemas is refused.
fn merge_all_of(map: &mut Map<String, Value>, at: &str) -> Result<(), NotStrict> {
    let Some(all_of) = map.remove("allOf") else { return Ok(()) };
    let mut all_of = match all_of {
        Value::Array(all_of) if all_of.len() == 1 => all_of,
        _ => return Err(refused(at, "`allOf` of several schemas is not supported")),
    };
    let Some(Value::Object(only)) = all_of.pop() else {
        return Err(refused(at, "`allOf` holds a boolean schema"));
    };
    for (key, value) in only {
        map.entry(key).or_insert(value);
    }
    Ok(())
}

/// An object's schema takes no field it does not declare (`additionalProperties: false`), and, where
/// the rules say so, requires every field; an object that takes free keys is refused.
fn close_object(map: &mut Map<String, Value>, rules: &Rules, at: &str) -> Result<(), NotStrict> {
    let is_object = map.get("properties").is_some()
        || map
            .get("type")
            .is_some_and(|ty| ty == "object" || ty.as_array().is_some_and(|t| t.contains(&"object".into())));
    if !is_object {
        return Ok(());
    }
    let declared = map.get("properties").and_then(Value::as_object).is_some_and(|p| !p.is_empty());
    match map.get("additionalProperties") {
        Some(Value::Bool(false)) => {}
        None if declared => {}
        None => {
            return Err(refused(
                at,
                "an object with no declared fields takes any field, which is not supported",
            ));
        }
        Some(_) => {
            return Err(refused(at, "a map with free keys is not supported; use a struct with named fields"));
        }
    }
    map.insert("additionalProperties".to_owned(), Value::Bool(false));
    if rules.all_required {
        require_all(map);
    }
    Ok(())
}

/// Rewrite the schemas inside this one (its properties, definitions, items and alternatives), each
/// named by its path from the root in an error.
fn rewrite_inside(map: &mut Map<String, Value>, rules: &Rules, at: &mut String) -> Result<(), NotStrict> {
    for (keyword, nested) in map.iter_mut() {
        let len = at.len();
        match (keyword.as_str(), nested) {
            ("properties" | "$defs", Value::Object(schemas)) => {
                for (name, schema) in schemas.iter_mut() {
                    let len = at.len();
                    at.push('/');
                    at.push_str(keyword);
                    at.push('/');
                    at.push_str(name);
                    rewrite(schema, rules, at)?;
                    at.truncate(len);
                }
            }
            ("items", schema @ Value::Object(_)) => {
                at.push_str("/items");
                rewrite(schema, rules, at)?;
            }
            ("anyOf", Value::Array(schemas)) => {
                for (i, schema) in schemas.iter_mut().enumerate() {
                    let len = at.len();
                    at.push_str(&format!("/{keyword}/{i}"));
                    rewrite(schema, rules, at)?;
                    at.truncate(len);
                }
            }
            _ => {}
        }
        at.truncate(len);
    }
    Ok(())
}

/// Every property required; those that were optional accept `null` instead.
fn require_all(map: &mut Map<String, Value>) {
    let required: BTreeSet<String> = map
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    let Some(Value::Object(properties)) = map.get_mut("properties") else { return };
    let mut all = Vec::with_capacity(properties.len());
    for (name, schema) in properties.iter_mut() {
        if !required.contains(name) {
            nullable(schema);
        }
        all.push(Value::String(name.clone()));
    }
    // One order whatever order the map keeps (serde_json's `preserve_order` may be on).
    all.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
    map.insert("required".to_owned(), Value::Array(all));
}

/// Makes `schema` also accept `null`.
fn nullable(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    if accepts_null(map) {
        return;
    }
    let enumerated = map.contains_key("enum") || map.contains_key("const");
    match map.get_mut("type") {
        Some(Value::String(ty)) if !enumerated => {
            let ty = std::mem::take(ty);
            map.insert("type".to_owned(), Value::Array(vec![Value::String(ty), "null".into()]));
            return;
        }
        Some(Value::Array(types)) if !enumerated => {
            types.push("null".into());
            return;
        }
        _ => {}
    }
    if let Some(Value::Array(options)) = map.get_mut("anyOf") {
        options.push(serde_json::json!({ "type": "null" }));
        return;
    }
    let description = map.remove("description");
    let inner = Value::Object(std::mem::take(map));
    map.insert("anyOf".to_owned(), Value::Array(vec![inner, serde_json::json!({ "type": "null" })]));
    if let Some(description) = description {
        map.insert("description".to_owned(), description);
    }
}

fn accepts_null(map: &Map<String, Value>) -> bool {
    let null = Value::from("null");
    match map.get("type") {
        Some(Value::String(ty)) if ty == "null" => return true,
        Some(Value::Array(types)) if types.contains(&null) && !map.contains_key("enum") => return true,
        _ => {}
    }
    if map.get("enum").and_then(Value::as_array).is_some_and(|values| values.contains(&Value::Null)) {
        return true;
    }
    map.get("anyOf")
        .and_then(Value::as_array)
        .is_some_and(|options| options.iter().any(|option| option.as_object().is_some_and(accepts_null)))
}

/// The pointer of a definition that refers back to itself, directly or through others.
fn recursive_definition(root: &Value) -> Option<String> {
    let definitions = root.get("$defs")?.as_object()?;
    let edges: BTreeMap<&str, BTreeSet<String>> = definitions
        .iter()
        .map(|(name, schema)| {
            let mut refs = BTreeSet::new();
            references(schema, &mut refs);
            (name.as_str(), refs)
        })
        .collect();
    for start in edges.keys() {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<&str> = edges[start].iter().map(String::as_str).collect();
        while let Some(name) = stack.pop() {
            if name == *start {
                return Some(format!("/$defs/{start}"));
            }
            if seen.insert(name) {
                stack.extend(edges.get(name).into_iter().flatten().map(String::as_str));
            }
        }
    }
    None
}

fn references(schema: &Value, refs: &mut BTreeSet<String>) {
    match schema {
        Value::Object(map) => {
            for (key, value) in map {
                match (key.as_str(), value) {
                    ("$ref", Value::String(target)) => {
                        if let Some(name) = target.strip_prefix("#/$defs/") {
                            refs.insert(name.to_owned());
                        }
                    }
                    _ => references(value, refs),
                }
            }
        }
        Value::Array(values) => values.iter().for_each(|value| references(value, refs)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => panic!("not an object"),
        }
    }

    fn args(properties: Value, required: Value) -> Map<String, Value> {
        object(json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false,
        }))
    }

    // OpenAI, one test per rule of strict function calling.

    #[test]
    fn openai_requires_every_property_and_makes_optional_ones_nullable() {
        let schema = args(
            json!({ "thread": { "type": "string" }, "note": { "type": "string", "description": "d" } }),
            json!(["thread"]),
        );
        let strict = Value::Object(openai(&schema).unwrap());
        assert_eq!(strict["required"], json!(["note", "thread"]));
        assert_eq!(strict["properties"]["note"], json!({ "type": ["string", "null"], "description": "d" }));
        assert_eq!(strict["properties"]["thread"], json!({ "type": "string" }));
    }

    #[test]
    fn openai_nullable_wraps_what_has_no_plain_type() {
        let schema = args(
            json!({
                "colour": { "type": "string", "enum": ["red", "blue"] },
                "row": { "$ref": "#/$defs/Row", "description": "the row" },
                "already": { "type": ["integer", "null"] },
            }),
            json!([]),
        );
        let strict = Value::Object(openai(&schema).unwrap());
        assert_eq!(
            strict["properties"]["colour"],
            json!({ "anyOf": [{ "type": "string", "enum": ["red", "blue"] }, { "type": "null" }] })
        );
        assert_eq!(
            strict["properties"]["row"],
            json!({ "anyOf": [{ "$ref": "#/$defs/Row" }, { "type": "null" }], "description": "the row" })
        );
        assert_eq!(strict["properties"]["already"], json!({ "type": ["integer", "null"] }));
    }

    #[test]
    fn openai_closes_every_object_nested_or_defined() {
        let mut schema = args(json!({ "row": { "$ref": "#/$defs/Row" } }), json!(["row"]));
        schema.insert(
            "$defs".into(),
            json!({ "Row": { "type": "object", "properties": { "cells": { "type": "array", "items": {
                "type": "object", "properties": { "v": { "type": "string" } }, "required": ["v"] } } },
                "required": ["cells"] } }),
        );
        let strict = Value::Object(openai(&schema).unwrap());
        assert_eq!(strict["additionalProperties"], false);
        assert_eq!(strict["$defs"]["Row"]["additionalProperties"], false);
        assert_eq!(strict["$defs"]["Row"]["properties"]["cells"]["items"]["additionalProperties"], false);
    }

    #[test]
    fn openai_drops_keywords_and_formats_it_refuses() {
        let schema = args(
            json!({
                "n": { "type": "integer", "format": "uint32", "minimum": 0 },
                "at": { "type": "string", "format": "date-time", "default": "now" },
                "tags": { "type": "array", "items": { "type": "string" }, "uniqueItems": true, "maxItems": 3 },
                "name": { "type": "string", "minLength": 1, "maxLength": 5 },
            }),
            json!(["n", "at", "tags", "name"]),
        );
        let strict = Value::Object(openai(&schema).unwrap());
        assert!(strict.get("$schema").is_none());
        assert_eq!(strict["properties"]["n"], json!({ "type": "integer", "minimum": 0 }));
        assert_eq!(strict["properties"]["at"], json!({ "type": "string", "format": "date-time" }));
        assert_eq!(
            strict["properties"]["tags"],
            json!({ "type": "array", "items": { "type": "string" }, "maxItems": 3 })
        );
        assert_eq!(strict["properties"]["name"], json!({ "type": "string" }));
    }

    #[test]
    fn openai_writes_one_of_as_any_of_and_unwraps_a_single_all_of() {
        let schema = args(
            json!({
                "mode": { "oneOf": [{ "const": "a" }, { "const": "b" }] },
                "row": { "allOf": [{ "$ref": "#/$defs/Row" }], "description": "the row" },
            }),
            json!(["mode", "row"]),
        );
        let strict = Value::Object(openai(&schema).unwrap());
        assert_eq!(strict["properties"]["mode"], json!({ "anyOf": [{ "const": "a" }, { "const": "b" }] }));
        assert_eq!(strict["properties"]["row"], json!({ "$ref": "#/$defs/Row", "description": "the row" }));
    }

    #[test]
    fn openai_refuses_what_it_cannot_express() {
        let map = args(
            json!({ "labels": { "type": "object", "additionalProperties": { "type": "string" } } }),
            json!([]),
        );
        assert_eq!(openai(&map).unwrap_err().at, "/properties/labels");
        let tuple =
            args(json!({ "pair": { "type": "array", "prefixItems": [{ "type": "integer" }] } }), json!([]));
        assert!(openai(&tuple).unwrap_err().reason.contains("tuple"));
        let anything = args(json!({ "blob": true }), json!([]));
        assert!(openai(&anything).is_err());
        let free = args(json!({ "blob": { "type": "object" } }), json!([]));
        assert!(openai(&free).unwrap_err().reason.contains("no declared fields"));
        let not_object = object(json!({ "type": "string" }));
        assert!(openai(&not_object).is_err());
    }

    #[test]
    fn openai_accepts_a_tool_without_arguments() {
        let strict = Value::Object(openai(&args(json!({}), json!([]))).unwrap());
        assert_eq!(
            strict,
            json!({ "type": "object", "properties": {}, "required": [], "additionalProperties": false })
        );
    }

    // Anthropic, one test per rule of strict tool use.

    #[test]
    fn anthropic_keeps_optional_properties_optional() {
        let schema =
            args(json!({ "thread": { "type": "string" }, "note": { "type": "string" } }), json!(["thread"]));
        let strict = Value::Object(anthropic(&schema).unwrap());
        assert_eq!(strict["required"], json!(["thread"]));
        assert_eq!(strict["properties"]["note"], json!({ "type": "string" }));
        assert_eq!(strict["additionalProperties"], false);
    }

    #[test]
    fn anthropic_drops_numeric_and_string_constraints() {
        let schema = args(
            json!({
                "n": { "type": "integer", "format": "uint8", "minimum": 0, "maximum": 255 },
                "name": { "type": "string", "minLength": 1, "pattern": "^[a-z]+$" },
                "site": { "type": "string", "format": "uri" },
            }),
            json!(["n", "name", "site"]),
        );
        let strict = Value::Object(anthropic(&schema).unwrap());
        assert_eq!(strict["properties"]["n"], json!({ "type": "integer" }));
        assert_eq!(strict["properties"]["name"], json!({ "type": "string", "pattern": "^[a-z]+$" }));
        assert_eq!(strict["properties"]["site"], json!({ "type": "string", "format": "uri" }));
    }

    #[test]
    fn anthropic_keeps_min_items_of_zero_or_one_only() {
        let schema = args(
            json!({
                "one": { "type": "array", "items": { "type": "string" }, "minItems": 1, "maxItems": 4 },
                "two": { "type": "array", "items": { "type": "string" }, "minItems": 2 },
            }),
            json!(["one", "two"]),
        );
        let strict = Value::Object(anthropic(&schema).unwrap());
        assert_eq!(
            strict["properties"]["one"],
            json!({ "type": "array", "items": { "type": "string" }, "minItems": 1 })
        );
        assert_eq!(strict["properties"]["two"], json!({ "type": "array", "items": { "type": "string" } }));
    }

    #[test]
    fn anthropic_refuses_recursive_types_openai_takes_them() {
        let mut schema = args(json!({ "tree": { "$ref": "#/$defs/Node" } }), json!(["tree"]));
        schema.insert(
            "$defs".into(),
            json!({ "Node": { "type": "object", "properties": {
                "kids": { "type": "array", "items": { "$ref": "#/$defs/Node" } } }, "required": ["kids"] } }),
        );
        assert_eq!(anthropic(&schema).unwrap_err().at, "/$defs/Node");
        assert!(openai(&schema).is_ok());
    }

    #[test]
    fn anthropic_refuses_free_maps() {
        let map = args(
            json!({ "labels": { "type": "object", "additionalProperties": { "type": "string" } } }),
            json!([]),
        );
        let error = anthropic(&map).unwrap_err();
        assert_eq!(
            error.to_string(),
            "no strict schema: at /properties/labels, a map with free keys is not supported; use a struct with named fields"
        );
    }
}
