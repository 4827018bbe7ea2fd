//! Policy options shared by `irqlab run` and `irqlab rt`, turned into a core [`Policy`].

use clap::{Args, ValueEnum};
use irqlab_core::{Delivery, DeviceCoalescing, HandlerStyle, ModeratorKind, Policy};

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum DeliveryArg {
    /// Every MSI is a CPU notification (stock kernel with VT-d remapping).
    Remapped,
    /// Posted MSI: PIR bits, one notification while ON is clear (intremap=posted_msi).
    Posted,
    /// No interrupts: poll the completion queue (poll_queues + hipri).
    Polled,
    /// io_uring hybrid IOPOLL: sleep half the fastest completion time, then poll.
    Hybrid,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ModeratorArg {
    None,
    NetDim,
    RdmaDim,
    IrqAm,
    Gsim,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum HandlerArg {
    /// nvme_irq in hardirq: reap every pending CQE.
    Hardirq,
    /// use_threaded_interrupts: check in hardirq, reap in a thread.
    Threaded,
    /// Reap up to --budget in hardirq, then hand over to irq_poll.
    IrqPoll,
}

#[derive(Clone, Debug, Args)]
pub struct PolicyArgs {
    /// How completion messages reach the CPU.
    #[arg(long, value_enum, default_value = "remapped")]
    pub delivery: DeliveryArg,
    /// Posted MSI demux loop limit (MAX_POSTED_MSI_COALESCING_LOOP; the kernel uses 3).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub max_loop: u32,
    /// Device coalescing: "off", "calibrated", or NVMe feature 08h as "THR,TIME"
    /// (THR 0-based entries, TIME in 100 µs units; e.g. "7,1").
    #[arg(long, default_value = "off", value_parser = parse_coalescing)]
    pub coalesce: DeviceCoalescing,
    /// Adaptive moderator that reprograms the device's coalescing.
    #[arg(long, value_enum, default_value = "none")]
    pub moderator: ModeratorArg,
    /// Interrupt handler style.
    #[arg(long, value_enum, default_value = "hardirq")]
    pub handler: HandlerArg,
    /// CQEs reaped in hardirq before handing over to irq_poll (NVME_POLL_BUDGET_IRQ).
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..))]
    pub budget: u32,
    /// irq_poll weight per poll call.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..))]
    pub weight: u32,
    /// Reap the completion queue (trylock) right after each batch submission.
    #[arg(long)]
    pub reap_after_submit: bool,
    /// Detect interrupt floods per CPU and move the flooded vector's work to a thread.
    #[arg(long)]
    pub flood_detection: bool,
}

impl PolicyArgs {
    pub fn policy(&self) -> Policy {
        Policy {
            delivery: match self.delivery {
                DeliveryArg::Remapped => Delivery::Remapped,
                DeliveryArg::Posted => Delivery::Posted {
                    max_loop: self.max_loop,
                },
                DeliveryArg::Polled => Delivery::Polled,
                DeliveryArg::Hybrid => Delivery::Hybrid,
            },
            coalescing: self.coalesce,
            moderator: match self.moderator {
                ModeratorArg::None => ModeratorKind::None,
                ModeratorArg::NetDim => ModeratorKind::NetDim,
                ModeratorArg::RdmaDim => ModeratorKind::RdmaDim,
                ModeratorArg::IrqAm => ModeratorKind::IrqAm,
                ModeratorArg::Gsim => ModeratorKind::Gsim,
            },
            handler: match self.handler {
                HandlerArg::Hardirq => HandlerStyle::Hardirq,
                HandlerArg::Threaded => HandlerStyle::Threaded,
                HandlerArg::IrqPoll => HandlerStyle::IrqPoll {
                    budget: self.budget,
                    weight: self.weight,
                },
            },
            reap_after_submit: self.reap_after_submit,
            flood_detection: self.flood_detection,
        }
    }
}

fn parse_coalescing(s: &str) -> Result<DeviceCoalescing, String> {
    match s {
        "off" => return Ok(DeviceCoalescing::Off),
        "calibrated" => return Ok(DeviceCoalescing::Calibrated),
        _ => {}
    }
    let expected = "expected \"off\", \"calibrated\" or \"THR,TIME\" with THR and TIME in 0..=255";
    let (thr, time) = s
        .split_once(',')
        .ok_or_else(|| format!("'{s}': {expected}"))?;
    let thr = thr
        .trim()
        .parse::<u8>()
        .map_err(|_| format!("'{s}': THR '{thr}' is not in 0..=255; {expected}"))?;
    let time_100us = time
        .trim()
        .parse::<u8>()
        .map_err(|_| format!("'{s}': TIME '{time}' is not in 0..=255; {expected}"))?;
    Ok(DeviceCoalescing::Nvme { thr, time_100us })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coalescing_parses_feature_08h_fields() {
        assert_eq!(
            parse_coalescing("7,1"),
            Ok(DeviceCoalescing::Nvme {
                thr: 7,
                time_100us: 1
            })
        );
        assert_eq!(parse_coalescing("off"), Ok(DeviceCoalescing::Off));
        assert!(parse_coalescing("256,1").unwrap_err().contains("THR"));
        assert!(parse_coalescing("7").is_err());
    }
}
