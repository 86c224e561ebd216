//! `smtlab man`: the manual page `smtlab.1` (roff), generated from the same
//! clap definitions that parse the command line; with `-o DIR`, also one
//! page per subcommand (`smtlab-run.1`, ...), as `man smtlab-run` expects.
//! The repository ships the generated page as `doc/smtlab.1` (a test keeps
//! it equal to this output).

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;

use crate::output;

#[derive(Args, Debug)]
#[command(after_help = "Examples:
  smtlab man | man -l -
  smtlab man -o /usr/local/share/man/man1")]
pub struct ManArgs {
    /// Write smtlab.1 and one page per subcommand into this directory
    /// instead of printing smtlab.1
    #[arg(short = 'o', long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

pub fn run(a: ManArgs, command: clap::Command) -> anyhow::Result<i32> {
    match &a.out {
        None => output::print(&page(command)?)?,
        Some(dir) => write_pages(command, dir)?,
    }
    Ok(0)
}

/// The roff text of `command`'s page.
pub fn page(command: clap::Command) -> anyhow::Result<String> {
    let mut roff = Vec::new();
    clap_mangen::Man::new(command).render(&mut roff)?;
    Ok(String::from_utf8(roff)?)
}

/// smtlab.1 and smtlab-SUB.1 for every visible subcommand.
fn write_pages(command: clap::Command, dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("-o {}: cannot create", dir.display()))?;
    let write = |name: &str, text: String| {
        let path = dir.join(format!("{name}.1"));
        std::fs::write(&path, text).with_context(|| format!("-o: cannot write {}", path.display()))
    };
    let command = command.version(env!("CARGO_PKG_VERSION"));
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("smtlab-{}", sub.get_name());
        let sub = sub
            .clone()
            .name(name.clone())
            .version(env!("CARGO_PKG_VERSION"));
        write(&name, page(sub)?)?;
    }
    write("smtlab", page(command)?)
}
