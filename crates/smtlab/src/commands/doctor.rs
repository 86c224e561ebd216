//! `smtlab doctor`: what this machine can and cannot measure, and how to fix
//! each gap — a table of checks and a summary, or one JSON object. The
//! checks live in `smtlab_doctor`; this file only renders them.
//! Missing capabilities are findings, not failures: the exit code is 0.

use clap::Args;
use serde::Serialize;
use smtlab_doctor::{self as doctor, Diagnosis};

use crate::output;

#[derive(Args, Debug)]
pub struct DoctorArgs {
    /// Print one JSON object: `checks` (name, status, finding, fix),
    /// `can_measure` and `cannot_measure`
    #[arg(long)]
    pub json: bool,
}

/// The JSON document; fields are only ever added under the same schema tag.
#[derive(Serialize)]
struct DoctorJson<'a> {
    schema: &'static str,
    #[serde(flatten)]
    report: &'a Diagnosis,
}

pub fn run(a: DoctorArgs) -> anyhow::Result<i32> {
    let report = doctor::run();
    if a.json {
        let doc = DoctorJson {
            schema: "smtlab.doctor/1",
            report: &report,
        };
        output::print(&(serde_json::to_string_pretty(&doc)? + "\n"))?;
    } else {
        output::print(&render(&report))?;
    }
    Ok(0)
}

/// Fold `text` into lines of at most `width` characters (at spaces).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// The text form: one row per check (status, name, finding), its fix
/// underneath, then what can and cannot be measured here.
fn render(r: &Diagnosis) -> String {
    const WIDTH: usize = 100;
    let name_w = r
        .checks
        .iter()
        .map(|c| c.name.len())
        .max()
        .unwrap_or(5)
        .max(5);
    let indent = 9 + name_w + 2;
    let text_w = WIDTH.saturating_sub(indent).max(40);
    let pad = " ".repeat(indent);
    let mut out = format!("{:<7}  {:<name_w$}  FINDING\n", "STATUS", "CHECK");
    for c in &r.checks {
        let finding = wrap(&c.finding, text_w);
        let mut rows = finding.iter();
        out += &format!(
            "{:<7}  {:<name_w$}  {}\n",
            c.status.as_str(),
            c.name,
            rows.next().map(String::as_str).unwrap_or("")
        );
        for row in rows {
            out += &format!("{pad}{row}\n");
        }
        if let Some(fix) = &c.fix {
            for (i, row) in wrap(&format!("fix: {fix}"), text_w).iter().enumerate() {
                let lead = if i == 0 { "" } else { "     " };
                out += &format!("{pad}{lead}{row}\n");
            }
        }
    }
    let list = |title: &str, items: &[String]| {
        let mut s = format!("\n{title}\n");
        if items.is_empty() {
            s += "  (nothing)\n";
        }
        for item in items {
            for (i, row) in wrap(item, WIDTH - 4).iter().enumerate() {
                s += &format!("{}{row}\n", if i == 0 { "  - " } else { "    " });
            }
        }
        s
    };
    out += &list("Can measure here:", &r.can_measure);
    out += &list("Cannot measure here:", &r.cannot_measure);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_folds_at_spaces() {
        assert_eq!(wrap("a bb ccc dddd", 6), vec!["a bb", "ccc", "dddd"]);
        assert!(wrap("", 10).is_empty());
    }
}
