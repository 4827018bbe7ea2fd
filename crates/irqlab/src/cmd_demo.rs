//! `irqlab demo`: a seeded burst of completion messages from several NVMe queues into
//! CPU 0, replayed through remapped and posted delivery (irqlab-burst).

use crate::CmdResult;
use clap::Args;
use irqlab_burst::Burst;
use irqlab_core::posted::MAX_POSTED_MSI_COALESCING_LOOP;

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Device vectors (one NVMe queue each) targeting CPU 0
    #[arg(long, default_value_t = 8)]
    pub vectors: u32,
    /// Completion messages to replay
    #[arg(long, default_value_t = 20_000)]
    pub messages: u64,
    /// MAX_POSTED_MSI_COALESCING_LOOP for the posted run (the extra round included)
    #[arg(long, default_value_t = MAX_POSTED_MSI_COALESCING_LOOP,
          value_parser = clap::value_parser!(u32).range(1..=64))]
    pub max_loop: u32,
    /// Seed of the arrival process
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Mean time between messages in ns (exponential gaps)
    #[arg(long, default_value_t = 800)]
    pub gap_ns: u64,
    /// Cost of one device handler call (nvme_irq) in ns
    #[arg(long, default_value_t = 500)]
    pub handler_ns: u64,
    /// Cost of one CPU notification (entry, EOI, exit) in ns
    #[arg(long, default_value_t = 600)]
    pub notify_ns: u64,
    /// Cost of one PIR harvest round in ns
    #[arg(long, default_value_t = 40)]
    pub round_ns: u64,
}

pub fn main(a: DemoArgs) -> CmdResult {
    let burst = Burst {
        vectors: a.vectors,
        messages: a.messages,
        max_loop: a.max_loop,
        seed: a.seed,
        gap_ns: a.gap_ns,
        handler_ns: a.handler_ns,
        notify_ns: a.notify_ns,
        round_ns: a.round_ns,
    };
    let replay = irqlab_burst::replay(&burst)?;
    crate::stdout::write(&irqlab_burst::render(&burst, &replay))?;
    Ok(())
}
