//! `agent_info.csv`: one row per agent of each process, from the catalog.
//!
//! The identity columns come from the agent row itself (`Node_Id` = node id,
//! `Logical_Node_Id`, `Agent_Type`, the four names); every other column from the agent's
//! `extdata`, the rocprofiler agent record as JSON (what rocprofv3 stores and AMD's writer
//! reads), looked up by the column name in lower case. Nested records are read as
//! rocprofv3 prints them: `workgroup_max_dim` / `grid_max_dim` by axis, and the three
//! packed fields (`fw_version`, `sdma_fw_version`, `capability`) as the 32-bit value their
//! bit fields make. A value the record does not hold is an empty field.

use rocpd_model::Agent;
use serde_json::{Map, Value};

use crate::layout::AGENT_HEADER;
use crate::text::Line;

/// Bit widths of the packed fields, in bit order from the least significant bit (the
/// KFD thunk's `HSA_ENGINE_ID`, `HSA_ENGINE_VERSION` and `HSA_CAPABILITY` layouts).
const FW_VERSION: &[(&str, u32)] = &[("uCode", 10), ("Major", 6), ("Minor", 8), ("Stepping", 8)];
const SDMA_FW_VERSION: &[(&str, u32)] = &[("uCodeSDMA", 10), ("uCodeRes", 10)];
const CAPABILITY: &[(&str, u32)] = &[
    ("HotPluggable", 1),
    ("HSAMMUPresent", 1),
    ("SharedWithGraphics", 1),
    ("QueueSizePowerOfTwo", 1),
    ("QueueSize32bit", 1),
    ("QueueIdleEvent", 1),
    ("VALimit", 1),
    ("WatchPointsSupported", 1),
    ("WatchPointsTotalBits", 4),
    ("DoorbellType", 2),
    ("AQLQueueDoubleMap", 1),
    ("DebugTrapSupported", 1),
    ("WaveLaunchTrapOverrideSupported", 1),
    ("WaveLaunchModeSupported", 1),
    ("PreciseMemoryOperationsSupported", 1),
    ("DEPRECATED_SRAM_EDCSupport", 1),
    ("Mem_EDCSupport", 1),
    ("RASEventNotify", 1),
    ("ASICRevision", 4),
    ("SRAM_EDCSupport", 1),
    ("SVMAPISupported", 1),
    ("CoherentHostAccess", 1),
    ("DebugSupportedFirmware", 1),
    ("PreciseALUOperationsSupported", 1),
    ("PerQueueResetSupported", 1),
];

/// The value of a packed field: a number as it is, or the fields of `layout` put together.
fn packed(v: &Value, layout: &[(&str, u32)]) -> Option<u64> {
    match v {
        Value::Object(m) => {
            let mut bits = 0u64;
            let mut shift = 0u32;
            for (name, width) in layout {
                let mask = (1u64 << width) - 1;
                let part = m.get(*name).and_then(Value::as_u64).unwrap_or(0) & mask;
                bits |= part << shift;
                shift += width;
            }
            Some(bits)
        }
        other => other.as_u64(),
    }
}

/// Writes a JSON scalar as a CSV field: numbers bare, text quoted, booleans 0/1.
fn scalar(line: &mut Line, v: Option<&Value>) {
    match v {
        Some(Value::Number(n)) => line.raw(&n.to_string()),
        Some(Value::String(s)) => line.text(s),
        Some(Value::Bool(b)) => line.int(u8::from(*b)),
        _ => line.empty(),
    }
}

/// The record's field for the column `column` (rocprofv3's name).
fn field(record: &Map<String, Value>, column: &str) -> Option<Value> {
    let key = column.to_ascii_lowercase();
    if let Some(v) = record.get(&key) {
        return match key.as_str() {
            "fw_version" => packed(v, FW_VERSION).map(Value::from),
            "sdma_fw_version" => packed(v, SDMA_FW_VERSION).map(Value::from),
            "capability" => packed(v, CAPABILITY).map(Value::from),
            _ => Some(v.clone()),
        };
    }
    // `Workgroup_Max_Dim_X` is `workgroup_max_dim.x` in the SDK's record.
    let (base, axis) = key.rsplit_once('_')?;
    record.get(base)?.get(axis).cloned()
}

/// Writes the row of `agent` (of the process with `guid`) into `line`.
pub(crate) fn agent_row(line: &mut Line, guid: &str, agent: &Agent) {
    let record: Map<String, Value> = agent
        .extdata
        .as_deref()
        .and_then(|t| serde_json::from_str::<Value>(t).ok())
        .and_then(|v| match v {
            Value::Object(m) => Some(m),
            _ => None,
        })
        .unwrap_or_default();
    let own_text = |column: &str| -> Option<&str> {
        match column {
            "Name" => agent.name.as_deref(),
            "Vendor_Name" => agent.vendor_name.as_deref(),
            "Product_Name" => agent.product_name.as_deref(),
            "Model_Name" => agent.model_name.as_deref(),
            _ => None,
        }
    };
    line.start();
    line.text(guid);
    for column in &AGENT_HEADER[1..] {
        match *column {
            "Node_Id" => line.int(agent.absolute_index.unwrap_or(agent.id)),
            "Logical_Node_Id" => match agent.logical_index {
                Some(i) => line.int(i),
                None => scalar(line, record.get("logical_node_id")),
            },
            "Agent_Type" => line.text(&agent.agent_type),
            "Name" | "Vendor_Name" | "Product_Name" | "Model_Name" => match own_text(column) {
                Some(s) => line.text(s),
                None => match field(&record, column) {
                    Some(Value::String(s)) => line.text(&s),
                    _ => line.text(""),
                },
            },
            _ => scalar(line, field(&record, column).as_ref()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(extdata: &str) -> Agent {
        Agent {
            source: 0,
            id: 9,
            nid: 1,
            pid: Some(5),
            agent_type: "GPU".into(),
            absolute_index: Some(9),
            logical_index: Some(9),
            type_index: Some(7),
            uuid: None,
            name: Some("gfx950".into()),
            model_name: Some("ip discovery".into()),
            vendor_name: Some("AMD".into()),
            product_name: Some("AMD Instinct \"MI350X\"".into()),
            user_name: None,
            extdata: Some(extdata.into()),
        }
    }

    fn fields(line: &mut Line) -> Vec<String> {
        let text = String::from_utf8(line.finish().to_vec()).unwrap();
        let mut r = csv::ReaderBuilder::new()
            .has_headers(false)
            .from_reader(text.as_bytes());
        r.records()
            .next()
            .unwrap()
            .unwrap()
            .iter()
            .map(String::from)
            .collect()
    }

    #[test]
    fn sdk_records_give_rocprofv3_values() {
        // Fields of a real MI350X agent record (rocprofv3 JSON output, TraceLens tests).
        let ext = r#"{"cpu_cores_count":0,"simd_count":1024,"wave_front_size":64,"num_xcc":8,
            "cu_count":256,"gfx_target_version":90500,"vendor_id":4098,"device_id":30112,
            "max_engine_clk_fcompute":2200,"sdma_fw_version":{"uCodeSDMA":12,"uCodeRes":0},
            "fw_version":{"uCode":38,"Major":0,"Minor":0,"Stepping":0},
            "capability":{"HotPluggable":0,"WatchPointsSupported":1,"WatchPointsTotalBits":2,"DoorbellType":2},
            "hive_id":17332996360099338395,"workgroup_max_dim":{"x":1024,"y":1024,"z":1024},
            "grid_max_dim":{"x":2147483647,"y":65535,"z":65535},"name":"ignored"}"#;
        let mut line = Line::default();
        agent_row(&mut line, "g-1", &agent(ext));
        let f = fields(&mut line);
        assert_eq!(f.len(), AGENT_HEADER.len());
        let at = |c: &str| f[AGENT_HEADER.iter().position(|h| *h == c).unwrap()].clone();
        assert_eq!(at("Guid"), "g-1");
        assert_eq!(
            (at("Node_Id"), at("Logical_Node_Id")),
            ("9".into(), "9".into())
        );
        assert_eq!(at("Agent_Type"), "GPU");
        assert_eq!(at("Simd_Count"), "1024");
        assert_eq!(at("Device_Id"), "30112");
        assert_eq!(at("Hive_Id"), "17332996360099338395");
        assert_eq!(at("Workgroup_Max_Dim_Y"), "1024");
        assert_eq!(at("Grid_Max_Dim_X"), "2147483647");
        assert_eq!(at("Fw_Version"), "38");
        assert_eq!(at("Sdma_Fw_Version"), "12");
        // WatchPointsSupported is bit 7, WatchPointsTotalBits bits 8-11, DoorbellType 12-13.
        assert_eq!(
            at("Capability"),
            ((1 << 7) | (2 << 8) | (2 << 12)).to_string()
        );
        assert_eq!(at("Product_Name"), "AMD Instinct \"MI350X\"");
        assert_eq!(at("Name"), "gfx950");
        assert_eq!(at("Num_Gws"), "");
    }

    #[test]
    fn flat_records_of_imported_csv_files_read_the_same() {
        let ext =
            r#"{"node_id":9,"workgroup_max_dim_x":256,"capability":12345,"local_mem_size":0}"#;
        let mut line = Line::default();
        agent_row(&mut line, "g", &agent(ext));
        let f = fields(&mut line);
        let at = |c: &str| f[AGENT_HEADER.iter().position(|h| *h == c).unwrap()].clone();
        assert_eq!(at("Workgroup_Max_Dim_X"), "256");
        assert_eq!(at("Capability"), "12345");
        assert_eq!(at("Local_Mem_Size"), "0");
        let mut line = Line::default();
        agent_row(&mut line, "g", &agent("not json"));
        assert_eq!(fields(&mut line).len(), AGENT_HEADER.len());
    }
}
