//! Check one bound of the protocol by hand and print its state count, depth and time, and any
//! counterexample as a timeline:
//!
//! ```text
//! cargo run -p tool-contract-model --release --example bound -- send workers=3 crashes=1
//! ```
//!
//! Arguments: `send` or `money`, then any of the [`Config`] fields as `name=value` (`workers`,
//! `budget`, `window`, `floor`, `margin`, `max_time`, `crashes`, `looks`, `answers`, `losses`, `late_probes`, `late_looks` (0 or 1),
//! `suspend`, `replaced` (0 or 1), `heal`) over [`Config::ci`]; `dfs` searches depth-first (less
//! memory, counterexamples not the shortest).

use tool_contract::effect::EffectKind;
use tool_contract_model::{Config, Protocol, Rules, check_with, timeline};

fn main() {
    let mut args = std::env::args().skip(1);
    let kind = match args.next().as_deref() {
        Some("money") => EffectKind::Money,
        Some("send") | None => EffectKind::Send,
        Some(other) => return eprintln!("`{other}`: the kind is `send` or `money`"),
    };
    let mut config = Config::ci(kind);
    let mut dfs = false;
    for arg in args {
        if arg == "dfs" {
            dfs = true;
            continue;
        }
        let Some((name, value)) = arg.split_once('=') else {
            return eprintln!("`{arg}`: write name=value, for instance workers=3");
        };
        let Ok(value) = value.parse::<u8>() else {
            return eprintln!("`{arg}`: the value is a number from 0 to 255");
        };
        if name == "replaced" || name == "late_looks" {
            *(if name == "replaced" { &mut config.replaced } else { &mut config.late_looks }) = value != 0;
            continue;
        }
        let field = match name {
            "workers" => &mut config.workers,
            "budget" => &mut config.budget,
            "window" => &mut config.window,
            "floor" => &mut config.floor,
            "margin" => &mut config.margin,
            "max_time" => &mut config.max_time,
            "crashes" => &mut config.crashes,
            "looks" => &mut config.looks,
            "answers" => &mut config.answers,
            "losses" => &mut config.losses,
            "late_probes" => &mut config.late_probes,
            "suspend" => &mut config.suspend,
            "heal" => &mut config.heal,
            _ => return eprintln!("`{name}` is not a field of the bound"),
        };
        *field = value;
    }
    println!("{config:?}");
    let run = check_with(Protocol { config, rules: Rules::real() }, None, dfs);
    for (name, path) in &run.violations {
        println!("counterexample to {name:?}:\n{}", timeline(path));
    }
    for name in &run.unreached {
        println!("never reached: {name}");
    }
    if !run.violations.is_empty() {
        std::process::exit(1);
    }
}
