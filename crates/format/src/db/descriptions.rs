//! Descriptions of a process's agents, kernels and counters: a row inserted, or the placeholder
//! a dispatch made before the description arrived filled in.

use super::file::{to_sql, DbFile};
use super::process_rows::ProcessRows;
use crate::error::FormatError;
use crate::naming::{formatted_name, metric_block, truncated_name, vendor_for_chip};
use crate::records::{AgentInfo, CounterInfo, KernelSymbol};
use rusqlite::params;

impl ProcessRows {
    pub(super) fn insert_agent(
        &mut self,
        db: &DbFile,
        agent: &AgentInfo,
    ) -> Result<(), FormatError> {
        let existing = self.agents.get(&agent.agent_id).copied();
        let rows = &*self;
        let extdata = serde_json::json!({
            "sm_count": agent.sm_count,
            "global_memory_bytes": agent.global_memory_bytes,
            "pci_location": agent.pci_location,
            "max_threads_per_sm": agent.max_threads_per_sm,
            "shared_memory_per_sm_bytes": agent.shared_memory_per_sm_bytes,
        })
        .to_string();
        let index = to_sql(agent.agent_id);
        let vendor = vendor_for_chip(&agent.chip);
        let result = match existing {
            Some(id) => db.conn.execute(
                &db.names.sql(r#"UPDATE rocpd_info_agent SET absolute_index = ?1, logical_index = ?1, type_index = ?1,
                   name = ?2, model_name = ?4, vendor_name = ?3, product_name = ?4, user_name = ?4,
                   extdata = ?5 WHERE id = ?6"#),
                params![index, agent.chip, vendor, agent.name, extdata, id],
            ),
            None => db.conn.execute(
                &db.names.sql(r#"INSERT INTO rocpd_info_agent (guid, nid, pid, type, absolute_index, logical_index,
                   type_index, name, model_name, vendor_name, product_name, user_name, extdata)
                   VALUES (?1, ?2, ?3, 'GPU', ?4, ?4, ?4, ?5, ?7, ?6, ?7, ?7, ?8)"#),
                params![rows.guid, rows.node_id, rows.row_id, index, agent.chip, vendor, agent.name, extdata],
            ),
        };
        result.map_err(|e| db.err(e))?;
        if existing.is_none() {
            let id = db.conn.last_insert_rowid();
            self.agents.insert(agent.agent_id, id);
            self.counters_for_new_agent(db, id)?;
        }
        Ok(())
    }

    pub(super) fn insert_kernel(
        &mut self,
        db: &DbFile,
        symbol: &KernelSymbol,
    ) -> Result<(), FormatError> {
        let existing = self.kernels.get(&symbol.kernel_id).map(|k| k.0);
        let code_object = self.code_object_row(db, symbol.code_object_id)?;
        let rows = &*self;
        // rocprofv3's `display_name`: the name the kernel naming options give.
        let formatted = formatted_name(rows.mangled_kernels, rows.truncate_kernels, symbol);
        // What rocpd's `kernel_symbols` view reads from `extdata`.
        let extdata = serde_json::json!({
            "kernel_id": to_sql(symbol.kernel_id),
            "formatted_kernel_name": formatted,
            "demangled_kernel_name": symbol.demangled_name,
            "truncated_kernel_name": truncated_name(&symbol.demangled_name),
        })
        .to_string();
        let result = match existing {
            Some(id) => db.conn.execute(
                &db.names.sql(r#"UPDATE rocpd_info_kernel_symbol SET kernel_name = ?1, display_name = ?2,
                   kernarg_segment_size = ?3, group_segment_size = ?4, private_segment_size = ?5,
                   arch_vgpr_count = ?6, extdata = ?8, code_object_id = ?9 WHERE id = ?7"#),
                params![
                    symbol.mangled_name,
                    formatted,
                    symbol.param_bytes,
                    symbol.static_shared_bytes,
                    symbol.local_bytes,
                    symbol.registers,
                    id,
                    extdata,
                    code_object
                ],
            ),
            None => db.conn.execute(
                &db.names.sql(r#"INSERT INTO rocpd_info_kernel_symbol (guid, nid, pid, code_object_id, kernel_name,
                   display_name, kernel_object, kernarg_segment_size, group_segment_size,
                   private_segment_size, sgpr_count, arch_vgpr_count, accum_vgpr_count, extdata)
                   VALUES (?1, ?2, ?3, ?12, ?4, ?5, ?6, ?7, ?8, ?9, 0, ?10, 0, ?11)"#),
                params![
                    rows.guid,
                    rows.node_id,
                    rows.row_id,
                    symbol.mangled_name,
                    formatted,
                    to_sql(symbol.kernel_id),
                    symbol.param_bytes,
                    symbol.static_shared_bytes,
                    symbol.local_bytes,
                    symbol.registers,
                    extdata,
                    code_object
                ],
            ),
        };
        result.map_err(|e| db.err(e))?;
        let id = existing.unwrap_or_else(|| db.conn.last_insert_rowid());
        let region = self.string_id(db, formatted)?;
        self.kernels.insert(
            symbol.kernel_id,
            (id, symbol.static_shared_bytes, symbol.local_bytes, region),
        );
        Ok(())
    }

    /// Describes a counter: its rows (one per agent) get the description; every known agent
    /// without one gets a row, or, before any agent is known, one row without agent.
    pub(super) fn insert_counter(
        &mut self,
        db: &DbFile,
        counter: &CounterInfo,
    ) -> Result<(), FormatError> {
        match self.described.iter_mut().find(|c| c.name == counter.name) {
            Some(known) => *known = counter.clone(),
            None => self.described.push(counter.clone()),
        }
        let block = metric_block(&counter.metric);
        let mut existing: Vec<(Option<i64>, i64)> = self
            .counters
            .iter()
            .filter(|((_, name), _)| *name == counter.name)
            .map(|((agent, _), id)| (*agent, *id))
            .collect();
        existing.sort_unstable_by_key(|(_, id)| *id);
        for (_, id) in &existing {
            db.conn
                .execute(
                    &db.names.sql(r#"UPDATE rocpd_info_pmc SET symbol = ?1, description = ?2, units = ?3, block = ?4,
                       expression = ?1, extdata = '{}' WHERE id = ?5"#),
                    params![counter.metric, counter.description, counter.unit, block, id],
                )
                .map_err(|e| db.err(e))?;
        }
        let mut agents: Vec<i64> = self.agents.values().copied().collect();
        agents.sort_unstable();
        for agent in &agents {
            if !existing.iter().any(|(a, _)| *a == Some(*agent)) {
                self.insert_pmc_row(db, Some(*agent), &counter.name, Some(counter))?;
            }
        }
        if agents.is_empty() && existing.is_empty() {
            self.insert_pmc_row(db, None, &counter.name, Some(counter))?;
        }
        Ok(())
    }
}
