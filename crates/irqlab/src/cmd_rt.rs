//! `irqlab rt`.

use clap::Args;

#[derive(Debug, Args)]
pub struct RtArgs {}

pub fn main(_args: RtArgs) -> Result<(), String> {
    Err("irqlab rt is being built".into())
}
