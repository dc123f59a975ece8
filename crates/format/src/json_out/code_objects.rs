//! `code_objects` laid out as rocprofv3 lays it out (its `metadata::get_code_objects`): entry `i`
//! is code object `i`, slot 0 and gaps rocprofiler-sdk's default-constructed load record, the
//! list as long as the largest id + 1 (one placeholder when the process loaded none).

use crate::code_object::{load_record_json, placeholder_json};
use crate::records::CodeObject;
use crate::run::ProcessRun;
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// Ids are renumbered when the list would be longer than this many entries per id, plus
/// [`SLOTS_SLACK`] (as kernel ids are).
const SLOTS_PER_ID: u64 = 16;
const SLOTS_SLACK: u64 = 4096;

/// The code objects of a process by JSON id, and the JSON id of each of ours.
pub(super) struct CodeObjects<'a> {
    objects: HashMap<u64, &'a CodeObject>,
    /// Our code object id → JSON id, when ours are too sparse to index a list; else empty.
    renumbered: HashMap<u64, u64>,
    len: u64,
}

impl<'a> CodeObjects<'a> {
    pub(super) fn new(run: &'a ProcessRun) -> CodeObjects<'a> {
        let mut ids = Vec::new();
        let mut seen = HashSet::new();
        let referenced = run.kernels.iter().map(|k| k.code_object_id);
        for id in run
            .code_objects
            .iter()
            .map(|c| c.code_object_id)
            .chain(referenced)
        {
            if id != 0 && seen.insert(id) {
                ids.push(id);
            }
        }
        let largest = ids.iter().copied().max().unwrap_or(0);
        let renumbered = if largest < SLOTS_PER_ID * ids.len() as u64 + SLOTS_SLACK {
            HashMap::new()
        } else {
            ids.iter()
                .enumerate()
                .map(|(index, id)| (*id, index as u64 + 1))
                .collect()
        };
        let mut table = CodeObjects {
            objects: HashMap::new(),
            renumbered,
            len: 0,
        };
        for object in &run.code_objects {
            let slot = table.slot(object.code_object_id);
            table.objects.entry(slot).or_insert(object);
        }
        table.len = ids.iter().map(|id| table.slot(*id)).max().unwrap_or(0) + 1;
        table
    }

    /// The JSON id (index in `code_objects`) of our code object id; 0 stays 0 (none).
    pub(super) fn slot(&self, code_object_id: u64) -> u64 {
        self.renumbered
            .get(&code_object_id)
            .copied()
            .unwrap_or(code_object_id)
    }

    /// The entries, each naming its agent by the handle `agent_handle` gives an agent id.
    pub(super) fn entries<'s>(
        &'s self,
        agent_handle: impl Fn(u64) -> u64 + 's,
    ) -> impl Iterator<Item = Value> + 's {
        (0..self.len).map(move |slot| match self.objects.get(&slot) {
            Some(object) => {
                let mut entry = load_record_json(object, agent_handle(object.agent_id));
                entry["code_object_id"] = slot.into();
                entry
            }
            None => placeholder_json(),
        })
    }
}
