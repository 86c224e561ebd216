//! Reading and writing columns: SQLite's extended error codes, text
//! columns holding one of a fixed set of names, JSON columns, and REALs
//! that read back NaN for NULL.

use rusqlite::types::Type;

pub(crate) fn extended_code(e: &rusqlite::Error) -> Option<i32> {
    match e {
        rusqlite::Error::SqliteFailure(f, _) => Some(f.extended_code),
        _ => None,
    }
}

/// A column that must hold one of a fixed set of names (or a number in
/// text); anything else is a conversion error naming the value.
pub(crate) fn parse_col<T>(
    r: &rusqlite::Row<'_>,
    idx: usize,
    parse: impl Fn(&str) -> Option<T>,
    what: &str,
) -> rusqlite::Result<T> {
    let text: String = r.get(idx)?;
    parse(&text).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            idx,
            Type::Text,
            format!("unknown {what} `{text}`").into(),
        )
    })
}

pub(crate) fn json_col<T: serde::de::DeserializeOwned>(
    r: &rusqlite::Row<'_>,
    idx: usize,
) -> rusqlite::Result<T> {
    let text: String = r.get(idx)?;
    serde_json::from_str(&text)
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(idx, Type::Text, Box::new(e)))
}

/// A REAL that the record type does not make optional: SQLite stores NaN as
/// NULL, so NULL reads back as NaN.
pub(crate) fn real_or_nan(r: &rusqlite::Row<'_>, idx: usize) -> rusqlite::Result<f64> {
    Ok(r.get::<_, Option<f64>>(idx)?.unwrap_or(f64::NAN))
}
