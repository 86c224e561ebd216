//! Errors counted by kind, as both load generators print them.

use std::collections::BTreeMap;

/// Errors by kind as `kind count, kind count`, or `none`: how both load
/// generators say what went wrong beside "nothing succeeded".
pub fn errors_list(errors: &BTreeMap<String, u64>) -> String {
    if errors.is_empty() {
        return "none".to_string();
    }
    let list: Vec<String> = errors.iter().map(|(k, v)| format!("{k} {v}")).collect();
    list.join(", ")
}
