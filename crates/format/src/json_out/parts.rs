//! Small pieces of the document: ids and dimensions as rocprofiler-sdk writes them, and arrays
//! built while they are written.

use serde::ser::{Error as _, Serializer};
use serde::Serialize;
use serde_json::{json, Value};

/// `{x, y, z}`, as rocprofiler-sdk writes a dim3.
pub(super) fn xyz(values: [u64; 3]) -> Value {
    json!({ "x": values[0], "y": values[1], "z": values[2] })
}

/// `{handle}`, as rocprofiler-sdk writes an id.
pub(super) fn handle(value: u64) -> Value {
    json!({ "handle": value })
}

/// A JSON array of what the closure's iterator yields, each element built as it is written.
pub(super) struct Array<F>(pub(super) F);

impl<F, I> Serialize for Array<F>
where
    F: Fn() -> I,
    I: IntoIterator,
    I::Item: Serialize,
{
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq((self.0)())
    }
}

/// A value written as its `serde_json::Value`: object keys sorted, like every object here.
pub(super) struct AsValue<T>(pub(super) T);

impl<T: Serialize> Serialize for AsValue<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serde_json::to_value(&self.0)
            .map_err(S::Error::custom)?
            .serialize(serializer)
    }
}

/// An empty JSON array: rocprofv3's lists that kreplay has nothing for.
pub(super) const NONE: [(); 0] = [];
