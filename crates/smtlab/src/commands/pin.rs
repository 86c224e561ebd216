//! `smtlab pin`: placeholder (being written).
use clap::Args;
#[derive(Args, Debug)]
pub struct PinArgs {}
pub fn run(_a: PinArgs) -> anyhow::Result<i32> { Ok(0) }
