//! Bulk work: how items are named and probed. The engine runs a bulk call with
//! [`engine::run_bulk`](crate::engine::run_bulk).

use std::future::Future;

use crate::key::IntentKey;
use crate::probe::NoProbe;
use crate::report::Item;

/// How an item of bulk work is named in the report.
pub trait ItemId {
    /// The item's name (a row number, an address); unique within one call.
    fn item_id(&self) -> String;
}

macro_rules! item_id_by_display {
    ($($t:ty),*) => {$(
        impl ItemId for $t {
            fn item_id(&self) -> String {
                self.to_string()
            }
        }
    )*};
}
item_id_by_display!(String, &str, u16, u32, u64, usize, i32, i64);

/// A probe for bulk work: given the items whose fate is unknown, say for each whether it landed.
///
/// Implemented for any `FnMut(IntentKey, Vec<I>) -> impl Future<Output = Vec<Item>>`: an item reported
/// with `applied: yes` landed, `no` did not, and `unknown` (or an item left out) could not be told.
pub trait BulkProber<I> {
    /// Probe these items.
    fn probe(&mut self, key: IntentKey, items: Vec<I>) -> impl Future<Output = Vec<Item>>;

    /// `false` only for [`NoProbe`].
    fn exists(&self) -> bool {
        true
    }
}

impl<I, F, Fut> BulkProber<I> for F
where
    F: FnMut(IntentKey, Vec<I>) -> Fut,
    Fut: Future<Output = Vec<Item>>,
{
    fn probe(&mut self, key: IntentKey, items: Vec<I>) -> impl Future<Output = Vec<Item>> {
        self(key, items)
    }
}

impl<I> BulkProber<I> for NoProbe {
    fn probe(&mut self, _key: IntentKey, _items: Vec<I>) -> impl Future<Output = Vec<Item>> {
        std::future::ready(Vec::new())
    }

    fn exists(&self) -> bool {
        false
    }
}
