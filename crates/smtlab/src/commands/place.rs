//! `smtlab place`: placeholder until the placement module lands.
use clap::Args;
#[derive(Args, Debug)]
pub struct PlaceArgs {}
pub fn run(_a: PlaceArgs) -> anyhow::Result<i32> { Ok(0) }
