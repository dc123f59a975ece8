//! A counter's name as samples carry it (issue 49): interned for the process's life, one copy
//! per distinct name, so that the millions of samples of a run are made, moved and dropped
//! without allocating (a run names a few counters; its samples repeat them). Reads as `&str`.

use internment::Intern;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::ops::Deref;

/// An interned counter name: copied as a pointer, compared and hashed by address (one name,
/// one address), ordered and shown as its text.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct CounterName(Intern<str>);

impl CounterName {
    /// The name's text, which lives as long as the process.
    pub fn as_str(&self) -> &'static str {
        self.0.as_ref()
    }
}

impl From<&str> for CounterName {
    fn from(name: &str) -> Self {
        CounterName(Intern::from(name))
    }
}

impl From<String> for CounterName {
    fn from(name: String) -> Self {
        CounterName::from(name.as_str())
    }
}

impl Deref for CounterName {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for CounterName {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl PartialOrd for CounterName {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for CounterName {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl PartialEq<str> for CounterName {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for CounterName {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for CounterName {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other
    }
}

impl fmt::Display for CounterName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for CounterName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl Serialize for CounterName {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for CounterName {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(CounterName::from)
    }
}

#[cfg(test)]
mod tests {
    use super::CounterName;

    #[test]
    fn one_name_one_address_its_text_everywhere() {
        let a = CounterName::from("SQ_WAVES");
        let b = CounterName::from(String::from("SQ_WAVES"));
        assert_eq!(a, b);
        assert!(std::ptr::eq(a.as_str(), b.as_str()));
        assert_ne!(a, CounterName::from("SQ_INSTS"));
        let owned = String::from("SQ_WAVES");
        assert!(a == "SQ_WAVES" && a == *"SQ_WAVES" && a == owned);
        assert!(CounterName::from("A") < CounterName::from("B"));
        assert_eq!(format!("{a} {a:?}"), "SQ_WAVES \"SQ_WAVES\"");
        let json = serde_json::to_string(&a).unwrap();
        assert_eq!(json, "\"SQ_WAVES\"");
        assert_eq!(serde_json::from_str::<CounterName>(&json).unwrap(), a);
    }
}
