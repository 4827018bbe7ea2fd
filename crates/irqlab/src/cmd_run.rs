//! `irqlab run`.

use clap::Args;

#[derive(Debug, Args)]
pub struct RunArgs {}

pub fn main(_args: RunArgs) -> Result<(), String> {
    Err("irqlab run is being built".into())
}
