//! `irqlab demo`.

use clap::Args;

#[derive(Debug, Args)]
pub struct DemoArgs {}

pub fn main(_args: DemoArgs) -> Result<(), String> {
    Err("irqlab demo is being built".into())
}
