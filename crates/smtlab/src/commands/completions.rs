//! `smtlab completions SHELL`: the shell's completion script for smtlab,
//! generated from the same clap definitions that parse the command line, so
//! it cannot go stale.

use clap::Args;
use clap_complete::Shell;

use crate::output;

#[derive(Args, Debug)]
#[command(after_help = "Install, for example:
  smtlab completions bash > ~/.local/share/bash-completion/completions/smtlab
  smtlab completions zsh > ~/.zfunc/_smtlab      (with fpath+=~/.zfunc in ~/.zshrc)
  smtlab completions fish > ~/.config/fish/completions/smtlab.fish")]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish (also elvish, powershell)
    #[arg(value_name = "SHELL")]
    pub shell: Shell,
}

pub fn run(a: CompletionsArgs, mut command: clap::Command) -> anyhow::Result<i32> {
    let mut script = Vec::new();
    clap_complete::generate(a.shell, &mut command, "smtlab", &mut script);
    output::print(&String::from_utf8(script)?)?;
    Ok(0)
}
