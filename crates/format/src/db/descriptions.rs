//! Descriptions of a process's agents, kernels and counters: a row inserted, or the placeholder
//! a dispatch made before the description arrived filled in.

use super::file::{to_sql, DbFile};
use super::process_rows::ProcessRows;
use crate::error::FormatError;
use crate::naming::{metric_block, vendor_for_chip};
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
        }
        Ok(())
    }

    pub(super) fn insert_kernel(
        &mut self,
        db: &DbFile,
        symbol: &KernelSymbol,
    ) -> Result<(), FormatError> {
        let existing = self.kernels.get(&symbol.kernel_id).map(|k| k.0);
        let rows = &*self;
        let result = match existing {
            Some(id) => db.conn.execute(
                &db.names.sql(r#"UPDATE rocpd_info_kernel_symbol SET kernel_name = ?1, display_name = ?2,
                   kernarg_segment_size = ?3, group_segment_size = ?4, private_segment_size = ?5,
                   arch_vgpr_count = ?6, extdata = '{}' WHERE id = ?7"#),
                params![
                    symbol.mangled_name,
                    symbol.demangled_name,
                    symbol.param_bytes,
                    symbol.static_shared_bytes,
                    symbol.local_bytes,
                    symbol.registers,
                    id
                ],
            ),
            None => db.conn.execute(
                &db.names.sql(r#"INSERT INTO rocpd_info_kernel_symbol (guid, nid, pid, code_object_id, kernel_name,
                   display_name, kernel_object, kernarg_segment_size, group_segment_size,
                   private_segment_size, sgpr_count, arch_vgpr_count, accum_vgpr_count)
                   VALUES (?1, ?2, ?3, 0, ?4, ?5, ?6, ?7, ?8, ?9, 0, ?10, 0)"#),
                params![
                    rows.guid,
                    rows.node_id,
                    rows.row_id,
                    symbol.mangled_name,
                    symbol.demangled_name,
                    to_sql(symbol.kernel_id),
                    symbol.param_bytes,
                    symbol.static_shared_bytes,
                    symbol.local_bytes,
                    symbol.registers
                ],
            ),
        };
        result.map_err(|e| db.err(e))?;
        let id = existing.unwrap_or_else(|| db.conn.last_insert_rowid());
        let region = self.string_id(db, &symbol.demangled_name)?;
        self.kernels.insert(
            symbol.kernel_id,
            (id, symbol.static_shared_bytes, symbol.local_bytes, region),
        );
        Ok(())
    }

    pub(super) fn insert_counter(
        &mut self,
        db: &DbFile,
        counter: &CounterInfo,
    ) -> Result<(), FormatError> {
        let existing = self.counters.get(&counter.name).copied();
        let rows = &*self;
        let block = metric_block(&counter.metric);
        let result = match existing {
            Some(id) => db.conn.execute(
                &db.names.sql(r#"UPDATE rocpd_info_pmc SET symbol = ?1, description = ?2, units = ?3, block = ?4,
                   expression = ?1, extdata = '{}' WHERE id = ?5"#),
                params![counter.metric, counter.description, counter.unit, block, id],
            ),
            None => db.conn.execute(
                &db.names.sql(r#"INSERT INTO rocpd_info_pmc (guid, nid, pid, target_arch, name, symbol, description,
                   component, units, value_type, block, expression, is_constant, is_derived)
                   VALUES (?1, ?2, ?3, 'GPU', ?4, ?5, ?6, 'kreplay', ?7, 'ABS', ?8, ?5, 0, 0)"#),
                params![
                    rows.guid,
                    rows.node_id,
                    rows.row_id,
                    counter.name,
                    counter.metric,
                    counter.description,
                    counter.unit,
                    block
                ],
            ),
        };
        result.map_err(|e| db.err(e))?;
        if existing.is_none() {
            let id = db.conn.last_insert_rowid();
            self.counters.insert(counter.name.clone(), id);
        }
        Ok(())
    }
}
