//! Reading a process's code objects back, and which of them each kernel symbol comes from
//! (`rocpd_info_kernel_symbol.code_object_id` holds the code object's row id).

use crate::error::FormatError;
use crate::records::CodeObject;
use crate::run::ProcessRun;
use rusqlite::Connection;
use std::collections::HashMap;
use std::path::Path;

/// Reads the code objects of process `guid` into `run` (after its agents: `agent_ids` maps agent
/// rows to producer ids) and gives its kernel symbols (read already) their producer code object
/// ids.
pub(super) fn read_code_objects(
    conn: &Connection,
    path: &Path,
    guid: &str,
    agent_ids: &HashMap<i64, u64>,
    run: &mut ProcessRun,
) -> Result<(), FormatError> {
    let err = |e| FormatError::sqlite(path, e);
    let mut statement = conn
        .prepare(
            "SELECT id, agent_id, uri, load_base, load_size, extdata FROM rocpd_info_code_object
             WHERE guid = ?1 ORDER BY id",
        )
        .map_err(err)?;
    let mut rows = statement.query([guid]).map_err(err)?;
    // Row id → producer code object id.
    let mut ids: HashMap<i64, u64> = HashMap::new();
    while let Some(row) = rows.next().map_err(err)? {
        let row_id: i64 = row.get(0).map_err(err)?;
        let extdata: Option<String> = row.get(5).map_err(err)?;
        let record: serde_json::Value = extdata
            .as_deref()
            .and_then(|text| serde_json::from_str(text).ok())
            .unwrap_or_default();
        let number = |key: &str| {
            record
                .get(key)
                .and_then(|v| v.as_u64().or_else(|| v.as_i64().map(|i| i as u64)))
                .unwrap_or(0)
        };
        let code_object_id = number("code_object_id");
        ids.insert(row_id, code_object_id);
        let agent_row: Option<i64> = row.get(1).map_err(err)?;
        if record.get("placeholder") == Some(&serde_json::Value::Bool(true)) {
            continue;
        }
        let Some(agent_id) = agent_row.and_then(|r| agent_ids.get(&r)) else {
            return Err(FormatError::Corrupt {
                path: path.to_path_buf(),
                detail: format!("code object row {row_id} refers to an unknown agent row"),
            });
        };
        let column = |index| -> Result<u64, FormatError> {
            Ok(row.get::<_, Option<i64>>(index).map_err(err)?.unwrap_or(0) as u64)
        };
        run.code_objects.push(CodeObject {
            code_object_id,
            agent_id: *agent_id,
            uri: row
                .get::<_, Option<String>>(2)
                .map_err(err)?
                .unwrap_or_default(),
            memory_base: number("memory_base"),
            memory_size: number("memory_size"),
            load_base: column(3)?,
            load_size: column(4)?,
        });
    }
    drop(rows);
    if ids.is_empty() {
        return Ok(());
    }
    let mut statement = conn
        .prepare(
            "SELECT kernel_object, code_object_id FROM rocpd_info_kernel_symbol WHERE guid = ?1",
        )
        .map_err(err)?;
    let links = statement
        .query_map([guid], |row| {
            Ok((
                row.get::<_, Option<i64>>(0)?.unwrap_or(0) as u64,
                row.get::<_, Option<i64>>(1)?.unwrap_or(0),
            ))
        })
        .map_err(err)?
        .collect::<Result<HashMap<u64, i64>, _>>()
        .map_err(err)?;
    for kernel in &mut run.kernels {
        if let Some(code_object) = links.get(&kernel.kernel_id).and_then(|r| ids.get(r)) {
            kernel.code_object_id = *code_object;
        }
    }
    Ok(())
}
