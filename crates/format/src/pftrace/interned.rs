//! Names written once and referred to by number (Perfetto's interned data): the dispatch slices'
//! category, kernel names and argument names, which millions of slices repeat (issue 49: half the
//! file's bytes were these names). The file is one packet sequence, so the numbers (`iid`s) are
//! the file's: each process's track descriptor carries the names new to the file, before any
//! event that refers to them, and the events that do say they need the sequence's incremental
//! state (`SEQ_NEEDS_INCREMENTAL_STATE`).

use super::{InternedData, InternedString};
use std::collections::HashMap;

/// The names given a number so far, per kind, and those not yet written.
#[derive(Clone, Default)]
pub(super) struct Interner {
    categories: HashMap<String, u64>,
    event_names: HashMap<String, u64>,
    annotation_names: HashMap<String, u64>,
    new: InternedData,
}

/// Which table of names (`InternedData`'s field).
#[derive(Clone, Copy)]
pub(super) enum Kind {
    Category,
    EventName,
    AnnotationName,
}

impl Interner {
    /// `name`'s number among the names of `kind` (from 1), given now if it has none.
    pub(super) fn iid(&mut self, kind: Kind, name: &str) -> u64 {
        let (table, new) = match kind {
            Kind::Category => (&mut self.categories, &mut self.new.event_categories),
            Kind::EventName => (&mut self.event_names, &mut self.new.event_names),
            Kind::AnnotationName => (
                &mut self.annotation_names,
                &mut self.new.debug_annotation_names,
            ),
        };
        if let Some(&iid) = table.get(name) {
            return iid;
        }
        let iid = table.len() as u64 + 1;
        table.insert(name.to_string(), iid);
        new.push(InternedString {
            iid: Some(iid),
            name: Some(name.to_string()),
        });
        iid
    }

    /// The names numbered since the last call, to write before any event refers to them; `None`
    /// if there are none.
    pub(super) fn take_new(&mut self) -> Option<InternedData> {
        let new = std::mem::take(&mut self.new);
        let empty = new.event_categories.is_empty()
            && new.event_names.is_empty()
            && new.debug_annotation_names.is_empty();
        (!empty).then_some(new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_keeps_its_number_and_is_written_once_per_kind() {
        let mut interner = Interner::default();
        assert_eq!(interner.iid(Kind::EventName, "k"), 1);
        assert_eq!(interner.iid(Kind::AnnotationName, "k"), 1);
        assert_eq!(interner.iid(Kind::EventName, "j"), 2);
        assert_eq!(interner.iid(Kind::EventName, "k"), 1);
        let first = interner.take_new().unwrap();
        let names = |v: &[InternedString]| -> Vec<(u64, String)> {
            v.iter()
                .map(|s| (s.iid.unwrap(), s.name.clone().unwrap()))
                .collect()
        };
        assert_eq!(
            names(&first.event_names),
            [(1, "k".to_string()), (2, "j".to_string())]
        );
        assert_eq!(names(&first.debug_annotation_names), [(1, "k".to_string())]);
        assert!(first.event_categories.is_empty());
        assert_eq!(interner.iid(Kind::EventName, "j"), 2);
        assert_eq!(interner.take_new(), None);
        assert_eq!(interner.iid(Kind::Category, "c"), 1);
        assert_eq!(
            names(&interner.take_new().unwrap().event_categories).len(),
            1
        );
    }
}
