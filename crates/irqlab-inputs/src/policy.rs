//! Policy options shared by `irqlab run`, `irqlab rt`, sweeps, scenario files and the
//! Python package, turned into a core [`Policy`]. Every front end parses a value with the
//! same clap parser, so `--max-loop 0`, `--set max_loop=0` and `max_loop=0` in Python are
//! refused with the same words.

use crate::InputError;
use clap::{Args, Parser, ValueEnum};
use irqlab_core::irq_poll::IrqPollUntil;
use irqlab_core::nvme::CoalescingDisable;
use irqlab_core::{Delivery, DeviceCoalescing, HandlerStyle, ModeratorKind, Policy};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
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

/// The posted notification handler (`--notification`; irqlab-core delivery/).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum NotificationArg {
    /// sysvec_posted_msi_notification as merged (v6.10): interrupts off, handlers called.
    Kernel,
    /// The posted-MSI talk's Attempt #2: a lower-priority notification vector and
    /// interrupts enabled in the demux, so the timer is not blocked.
    Preemptable,
    /// The talk's Attempt #3: each harvested vector sent to the CPU as a self-IPI.
    SelfIpi,
}

/// When the IRQ_POLL softirq stops polling (`--irq-poll-until`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum IrqPollUntilArg {
    /// lib/irq_poll.c: the 256 budget or the next jiffy.
    Budget,
    /// Sagi Grimberg's variant: no budget, no jiffy window, until need_resched().
    Resched,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ModeratorArg {
    None,
    NetDim,
    RdmaDim,
    IrqAm,
    Gsim,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum HandlerArg {
    /// nvme_irq in hardirq: reap every pending CQE.
    Hardirq,
    /// use_threaded_interrupts: check in hardirq, reap in a thread.
    Threaded,
    /// Reap up to --budget in hardirq, then hand over to irq_poll.
    IrqPoll,
    /// NAPI's shape: mask and schedule the poll from hardirq; napi_complete_done keeps the
    /// IRQ masked for --defer-hard-irqs empty polls, re-polling after --gro-flush-timeout.
    NapiDefer,
}

#[derive(Clone, Debug, PartialEq, Eq, Args)]
pub struct PolicyArgs {
    /// How completion messages reach the CPU.
    #[arg(long, value_enum, default_value = "remapped")]
    pub delivery: DeliveryArg,
    /// Posted MSI demux loop limit (MAX_POSTED_MSI_COALESCING_LOOP; the kernel uses 3).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub max_loop: u32,
    /// Posted MSI's notification handler: "kernel" (as merged), "preemptable" (Attempt
    /// #2) or "self-ipi" (Attempt #3).
    #[arg(long, value_enum, default_value = "kernel")]
    pub notification: NotificationArg,
    /// Device coalescing: "off", "calibrated", or NVMe feature 08h as "THR,TIME"
    /// (THR 0-based entries, TIME in 100 µs units; e.g. "7,1").
    #[arg(long, default_value = "off", value_parser = parse_coalescing)]
    pub coalesce: DeviceCoalescing,
    /// NVMe feature 09h: the interrupt vectors whose Coalescing Disable bit is set, e.g.
    /// "1,3" or "1-4" (I/O queue qN interrupts on vector N), or "none".
    #[arg(long, default_value = "none", value_parser = parse_coalesce_disable)]
    pub coalesce_disable: CoalescingDisable,
    /// Adaptive moderator that reprograms the device's coalescing.
    #[arg(long, value_enum, default_value = "none")]
    pub moderator: ModeratorArg,
    /// Interrupt handler style.
    #[arg(long, value_enum, default_value = "hardirq")]
    pub handler: HandlerArg,
    /// CQEs reaped in hardirq before handing over to irq_poll (NVME_POLL_BUDGET_IRQ).
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..))]
    pub budget: u32,
    /// irq_poll weight per poll call (the NAPI weight with --handler napi-defer).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..))]
    pub weight: u32,
    /// When the IRQ_POLL softirq stops: "budget" (lib/irq_poll.c) or "resched" (Sagi
    /// Grimberg's variant: until need_resched()).
    #[arg(long, value_enum, default_value = "budget")]
    pub irq_poll_until: IrqPollUntilArg,
    /// napi_defer_hard_irqs: empty polls that keep the IRQ masked (0, the kernel's
    /// default, defers nothing).
    #[arg(long, default_value_t = 0)]
    pub defer_hard_irqs: u32,
    /// gro_flush_timeout in ns: how long a deferring poll waits before polling again.
    #[arg(long, default_value_t = 0)]
    pub gro_flush_timeout: u64,
    /// Reap the completion queue (trylock) right after each batch submission.
    #[arg(long)]
    pub reap_after_submit: bool,
    /// Detect interrupt floods per CPU and move the flooded vector's work to a thread.
    #[arg(long)]
    pub flood_detection: bool,
}

impl Default for PolicyArgs {
    /// The stock kernel, as the command line's defaults say.
    fn default() -> Self {
        PolicyOnly::parse_from(Vec::<String>::new()).policy
    }
}

impl PolicyArgs {
    /// Options as `irqlab run` takes them (`--delivery posted --max-loop 3 ...`), every
    /// one written out, so parsing them gives back `self`.
    pub fn to_args(&self) -> Vec<String> {
        let name = |v: Option<clap::builder::PossibleValue>| {
            v.map_or_else(String::new, |p| p.get_name().to_string())
        };
        let coalesce = match self.coalesce {
            DeviceCoalescing::Off => "off".to_string(),
            DeviceCoalescing::Calibrated => "calibrated".to_string(),
            DeviceCoalescing::Nvme { thr, time_100us } => format!("{thr},{time_100us}"),
        };
        let mut out = vec![
            "--delivery".to_string(),
            name(self.delivery.to_possible_value()),
            "--max-loop".into(),
            self.max_loop.to_string(),
            "--coalesce".into(),
            coalesce,
            "--moderator".into(),
            name(self.moderator.to_possible_value()),
            "--handler".into(),
            name(self.handler.to_possible_value()),
            "--budget".into(),
            self.budget.to_string(),
            "--weight".into(),
            self.weight.to_string(),
        ];
        // Options added later are written only when set, so earlier plans read the same.
        let d = PolicyArgs::default();
        if self.notification != d.notification {
            out.extend([
                "--notification".into(),
                name(self.notification.to_possible_value()),
            ]);
        }
        if self.coalesce_disable != d.coalesce_disable {
            out.extend([
                "--coalesce-disable".into(),
                self.coalesce_disable.to_string(),
            ]);
        }
        if self.irq_poll_until != d.irq_poll_until {
            out.extend([
                "--irq-poll-until".into(),
                name(self.irq_poll_until.to_possible_value()),
            ]);
        }
        if self.defer_hard_irqs != d.defer_hard_irqs {
            out.extend(["--defer-hard-irqs".into(), self.defer_hard_irqs.to_string()]);
        }
        if self.gro_flush_timeout != d.gro_flush_timeout {
            out.extend([
                "--gro-flush-timeout".into(),
                self.gro_flush_timeout.to_string(),
            ]);
        }
        if self.reap_after_submit {
            out.push("--reap-after-submit".into());
        }
        if self.flood_detection {
            out.push("--flood-detection".into());
        }
        out
    }

    /// Parses options in `irqlab run`'s syntax (`--delivery posted --max-loop 3`).
    pub fn from_args<I: IntoIterator<Item = S>, S: Into<String>>(
        args: I,
    ) -> Result<PolicyArgs, PolicyParseError> {
        let argv: Vec<String> = args.into_iter().map(Into::into).collect();
        PolicyOnly::try_parse_from(argv)
            .map(|p| p.policy)
            .map_err(|e| PolicyParseError(first_line(&e)))
    }

    /// The policy, after [`contradictions`] found none: what every front end runs.
    pub fn checked_policy(&self) -> Result<Policy, InputError> {
        contradictions(self)?;
        Ok(self.policy())
    }

    /// The core policy, unchecked (see [`PolicyArgs::checked_policy`]).
    pub fn policy(&self) -> Policy {
        Policy {
            delivery: match (self.delivery, self.notification) {
                (DeliveryArg::Remapped, _) => Delivery::Remapped,
                (DeliveryArg::Posted, NotificationArg::Kernel) => Delivery::Posted {
                    max_loop: self.max_loop,
                },
                (DeliveryArg::Posted, NotificationArg::Preemptable) => {
                    Delivery::PostedPreemptable {
                        max_loop: self.max_loop,
                    }
                }
                (DeliveryArg::Posted, NotificationArg::SelfIpi) => Delivery::PostedSelfIpi {
                    max_loop: self.max_loop,
                },
                (DeliveryArg::Polled, _) => Delivery::Polled,
                (DeliveryArg::Hybrid, _) => Delivery::Hybrid,
            },
            coalescing: self.coalesce,
            coalescing_disable: self.coalesce_disable,
            irq_poll_until: match self.irq_poll_until {
                IrqPollUntilArg::Budget => IrqPollUntil::Budget,
                IrqPollUntilArg::Resched => IrqPollUntil::Resched,
            },
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
                HandlerArg::NapiDefer => HandlerStyle::NapiDefer {
                    weight: self.weight,
                    defer_hard_irqs: self.defer_hard_irqs,
                    gro_flush_timeout_ns: self.gro_flush_timeout,
                },
            },
            reap_after_submit: self.reap_after_submit,
            flood_detection: self.flood_detection,
        }
    }
}

/// The one place that decides which policy options mean something together: every pair
/// that does not is refused here, with the reason, by `irqlab run`, `rt`, `sweep`,
/// scenario files and Python alike, so no report shows a policy its run did not use.
pub fn contradictions(p: &PolicyArgs) -> Result<(), InputError> {
    let d = PolicyArgs::default();
    let polled = matches!(p.delivery, DeliveryArg::Polled | DeliveryArg::Hybrid);
    let delivery = p
        .delivery
        .to_possible_value()
        .map_or_else(String::new, |v| v.get_name().to_string());
    let mut why: Vec<String> = Vec::new();
    if polled {
        // No interrupt is raised: nothing to coalesce, moderate, handle or flood.
        let no_irq = format!("--delivery {delivery} raises no interrupt");
        if p.coalesce != d.coalesce {
            why.push(format!("{no_irq} for --coalesce to coalesce"));
        }
        if p.moderator != d.moderator {
            why.push(format!("{no_irq} for --moderator to moderate"));
        }
        if p.handler != d.handler {
            why.push(format!("{no_irq} for --handler to handle"));
        }
        if p.flood_detection {
            why.push(format!("{no_irq} for --flood-detection to detect"));
        }
        if p.reap_after_submit {
            why.push(format!(
                "{no_irq}, and its submitters reap by polling anyway (--reap-after-submit)"
            ));
        }
    }
    if p.max_loop != d.max_loop && p.delivery != DeliveryArg::Posted {
        why.push(format!(
            "--max-loop is posted MSI's demux loop limit, and --delivery is {delivery}"
        ));
    }
    if p.notification != d.notification && p.delivery != DeliveryArg::Posted {
        why.push(format!(
            "--notification is posted MSI's notification handler, and --delivery is {delivery}"
        ));
    }
    if p.budget != d.budget && p.handler != HandlerArg::IrqPoll {
        why.push("--budget is irq_poll's hardirq budget, and --handler is not irq-poll".into());
    }
    if p.weight != d.weight && !matches!(p.handler, HandlerArg::IrqPoll | HandlerArg::NapiDefer) {
        why.push(
            "--weight is the poll function's, and --handler is neither irq-poll nor napi-defer"
                .into(),
        );
    }
    if p.irq_poll_until != d.irq_poll_until && p.handler != HandlerArg::IrqPoll {
        why.push("--irq-poll-until is irq_poll's stop rule, and --handler is not irq-poll".into());
    }
    if (p.defer_hard_irqs != d.defer_hard_irqs || p.gro_flush_timeout != d.gro_flush_timeout)
        && p.handler != HandlerArg::NapiDefer
    {
        why.push(
            "--defer-hard-irqs and --gro-flush-timeout are NAPI's deferral, and --handler is not napi-defer"
                .into(),
        );
    }
    if p.handler == HandlerArg::NapiDefer && p.defer_hard_irqs > 0 && p.gro_flush_timeout == 0 {
        why.push(
            "--defer-hard-irqs without --gro-flush-timeout defers nothing (napi_complete_done arms no timer for a timeout of 0)"
                .into(),
        );
    }
    if !p.coalesce_disable.is_empty() && !matches!(p.coalesce, DeviceCoalescing::Nvme { .. }) {
        why.push(
            "--coalesce-disable turns feature 08h aggregation off on some vectors, and --coalesce is not THR,TIME"
                .into(),
        );
    }
    if matches!(
        p.moderator,
        ModeratorArg::NetDim | ModeratorArg::RdmaDim | ModeratorArg::IrqAm
    ) && p.coalesce != d.coalesce
        && !polled
    {
        why.push(
            "the moderator programs the device's coalescing itself, from its start profile, so --coalesce would never apply"
                .into(),
        );
    }
    if p.moderator == ModeratorArg::Gsim && p.handler == HandlerArg::IrqPoll {
        why.push("--moderator gsim and --handler irq-poll both mask the vector; choose one".into());
    }
    if p.moderator == ModeratorArg::Gsim && p.handler == HandlerArg::NapiDefer {
        why.push(
            "--moderator gsim and --handler napi-defer both mask the vector; choose one".into(),
        );
    }
    if p.flood_detection && p.handler == HandlerArg::Threaded && !polled {
        why.push(
            "--flood-detection moves a flooded vector's work to a thread, and --handler threaded has put it there already"
                .into(),
        );
    }
    if why.is_empty() {
        return Ok(());
    }
    Err(InputError::Contradiction(format!(
        "policy options that contradict each other: {}; expected options that each change the run",
        why.join("; ")
    )))
}

/// The `--event` changes against the policy: they move interrupts, so a run must have
/// some (checked with [`contradictions`] by the front ends that take `--event`).
pub fn event_contradictions(p: &PolicyArgs, events: &crate::EventArgs) -> Result<(), InputError> {
    if events.events.is_empty() || !matches!(p.delivery, DeliveryArg::Polled | DeliveryArg::Hybrid)
    {
        return Ok(());
    }
    let delivery = p
        .delivery
        .to_possible_value()
        .map_or_else(String::new, |v| v.get_name().to_string());
    Err(InputError::Contradiction(format!(
        "policy options that contradict each other: --event moves interrupts, and --delivery {delivery} raises none; expected options that each change the run"
    )))
}

/// Only the policy options, to parse them exactly as `irqlab run` would.
#[derive(Parser)]
#[command(no_binary_name = true, name = "policy")]
struct PolicyOnly {
    #[command(flatten)]
    policy: PolicyArgs,
}

/// The first line of a clap error, without its "error: " prefix.
/// Why policy options in `irqlab run`'s syntax did not parse: the first line of the
/// command line parser's message (it names the option and what was expected).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyParseError(pub String);

impl std::fmt::Display for PolicyParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PolicyParseError {}

fn first_line(e: &clap::Error) -> String {
    let text = e.to_string();
    text.lines()
        .next()
        .unwrap_or("invalid policy")
        .trim()
        .trim_start_matches("error: ")
        .to_string()
}

/// Parses `irqlab run` policy options (e.g. "--delivery posted --max-loop 3") with the
/// command line's own parser, so a scenario file accepts exactly what `irqlab run` does.
pub fn parse_policy(text: &str) -> Result<Policy, InputError> {
    let args =
        PolicyArgs::from_args(text.split_whitespace()).map_err(|PolicyParseError(message)| {
            InputError::Policy {
                text: text.to_string(),
                message,
            }
        })?;
    args.checked_policy().map_err(|e| InputError::Policy {
        text: text.to_string(),
        message: e.to_string(),
    })
}

/// A policy choice that can be set from text (a sweep's `--set delivery=posted`, a
/// Python keyword argument); parsed by the command line's own [`PolicyArgs`] parser.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyKey {
    Delivery,
    MaxLoop,
    Notification,
    Coalesce,
    CoalesceDisable,
    Moderator,
    Handler,
    Budget,
    Weight,
    IrqPollUntil,
    DeferHardIrqs,
    GroFlushTimeout,
    ReapAfterSubmit,
    FloodDetection,
}

/// Every policy key by name.
pub const POLICY_KEYS: [(&str, PolicyKey); 14] = [
    ("delivery", PolicyKey::Delivery),
    ("max_loop", PolicyKey::MaxLoop),
    ("notification", PolicyKey::Notification),
    ("coalesce", PolicyKey::Coalesce),
    ("coalesce_disable", PolicyKey::CoalesceDisable),
    ("moderator", PolicyKey::Moderator),
    ("handler", PolicyKey::Handler),
    ("budget", PolicyKey::Budget),
    ("weight", PolicyKey::Weight),
    ("irq_poll_until", PolicyKey::IrqPollUntil),
    ("defer_hard_irqs", PolicyKey::DeferHardIrqs),
    ("gro_flush_timeout", PolicyKey::GroFlushTimeout),
    ("reap_after_submit", PolicyKey::ReapAfterSubmit),
    ("flood_detection", PolicyKey::FloodDetection),
];

impl PolicyKey {
    /// The key named `key` (`policy.` prefix and dashes allowed: `max-loop`).
    pub fn lookup(key: &str) -> Option<PolicyKey> {
        let key = key.strip_prefix("policy.").unwrap_or(key).replace('-', "_");
        POLICY_KEYS.iter().find(|(n, _)| *n == key).map(|&(_, k)| k)
    }

    /// [`PolicyKey::lookup`], or an error listing the keys.
    pub fn named(key: &str) -> Result<PolicyKey, InputError> {
        PolicyKey::lookup(key).ok_or_else(|| InputError::UnknownPolicyKey(key.to_string()))
    }

    pub fn name(self) -> &'static str {
        POLICY_KEYS
            .iter()
            .find(|(_, k)| *k == self)
            .map_or("?", |(n, _)| n)
    }

    fn is_switch(self) -> bool {
        matches!(self, PolicyKey::ReapAfterSubmit | PolicyKey::FloodDetection)
    }

    /// Sets this key of `base` to `value`, parsed by the command line's policy options.
    pub fn apply(self, base: &mut PolicyArgs, value: &str) -> Result<(), InputError> {
        let fail = |message: String| InputError::PolicyValue {
            key: self.name().to_string(),
            message,
        };
        let flag = format!("--{}", self.name().replace('_', "-"));
        let argv: Vec<String> = if self.is_switch() {
            match value {
                "true" | "True" | "on" | "1" => vec![flag],
                "false" | "False" | "off" | "0" => vec![],
                _ => return Err(fail(format!("'{value}' is not true or false"))),
            }
        } else {
            vec![flag, value.to_string()]
        };
        let parsed = PolicyArgs::from_args(argv).map_err(|e| fail(e.0))?;
        match self {
            PolicyKey::Delivery => base.delivery = parsed.delivery,
            PolicyKey::MaxLoop => base.max_loop = parsed.max_loop,
            PolicyKey::Notification => base.notification = parsed.notification,
            PolicyKey::Coalesce => base.coalesce = parsed.coalesce,
            PolicyKey::CoalesceDisable => base.coalesce_disable = parsed.coalesce_disable,
            PolicyKey::Moderator => base.moderator = parsed.moderator,
            PolicyKey::Handler => base.handler = parsed.handler,
            PolicyKey::Budget => base.budget = parsed.budget,
            PolicyKey::Weight => base.weight = parsed.weight,
            PolicyKey::IrqPollUntil => base.irq_poll_until = parsed.irq_poll_until,
            PolicyKey::DeferHardIrqs => base.defer_hard_irqs = parsed.defer_hard_irqs,
            PolicyKey::GroFlushTimeout => base.gro_flush_timeout = parsed.gro_flush_timeout,
            PolicyKey::ReapAfterSubmit => base.reap_after_submit = parsed.reap_after_submit,
            PolicyKey::FloodDetection => base.flood_detection = parsed.flood_detection,
        }
        Ok(())
    }
}

/// `--coalesce-disable`: "none", or IVs and IV ranges separated by commas ("1,3-4").
fn parse_coalesce_disable(s: &str) -> Result<CoalescingDisable, String> {
    let mut set = CoalescingDisable::default();
    if s.trim() == "none" {
        return Ok(set);
    }
    let expected = "expected \"none\" or interrupt vectors such as \"1,3\" or \"1-4\" (I/O queue qN interrupts on vector N)";
    for part in s.split(',') {
        let part = part.trim();
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        let num = |t: &str| {
            t.trim()
                .parse::<u32>()
                .map_err(|_| format!("'{s}': '{part}' is not a vector number; {expected}"))
        };
        let (lo, hi) = (num(lo)?, num(hi)?);
        if lo == 0 {
            return Err(format!(
                "'{s}': vector 0 is the admin queue's, which carries no I/O; {expected}"
            ));
        }
        if lo > hi {
            return Err(format!("'{s}': the range '{part}' is empty; {expected}"));
        }
        for iv in lo..=hi {
            set.insert(iv).map_err(|e| format!("'{s}': {e}"))?;
        }
    }
    Ok(set)
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

    #[test]
    fn policy_values_use_the_cli_parser() {
        let mut p = PolicyArgs::default();
        PolicyKey::MaxLoop.apply(&mut p, "7").unwrap();
        assert_eq!(p.max_loop, 7);
        PolicyKey::Coalesce.apply(&mut p, "7,1").unwrap();
        PolicyKey::ReapAfterSubmit.apply(&mut p, "true").unwrap();
        assert!(p.reap_after_submit);
        PolicyKey::Delivery.apply(&mut p, "posted").unwrap();
        assert!(matches!(
            p.policy().delivery,
            irqlab_core::Delivery::Posted { max_loop: 7 }
        ));
        let e = PolicyKey::MaxLoop
            .apply(&mut p, "0")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("max_loop: ") && e.contains('0'), "{e}");
        let e = PolicyKey::Delivery
            .apply(&mut p, "carrier-pigeon")
            .unwrap_err()
            .to_string();
        assert!(e.contains("carrier-pigeon"), "{e}");
        assert!(PolicyKey::FloodDetection.apply(&mut p, "maybe").is_err());
        assert!(PolicyKey::named("nope").is_err());
    }

    #[test]
    fn options_that_contradict_are_refused_with_the_reason() {
        let refused = |args: &str| {
            PolicyArgs::from_args(args.split_whitespace())
                .unwrap()
                .checked_policy()
                .unwrap_err()
                .to_string()
        };
        let e = refused(
            "--delivery polled --moderator net-dim --coalesce 7,1 --handler irq-poll --flood-detection",
        );
        for want in [
            "--coalesce",
            "--moderator",
            "--handler",
            "--flood-detection",
        ] {
            assert!(e.contains(want), "{want}: {e}");
        }
        assert!(refused("--max-loop 5").contains("posted MSI's demux loop"));
        assert!(refused("--budget 32").contains("irq_poll's"));
        assert!(refused("--moderator irq-am --coalesce 7,1").contains("programs the device"));
        assert!(refused("--moderator gsim --handler irq-poll").contains("both mask"));
        assert!(refused("--handler threaded --flood-detection").contains("already"));
        assert!(refused("--delivery hybrid --reap-after-submit").contains("poll"));
        assert!(refused("--notification preemptable").contains("posted MSI's notification"));
        assert!(refused("--weight 8").contains("neither irq-poll nor napi-defer"));
        assert!(refused("--handler napi-defer --budget 8").contains("hardirq budget"));
        assert!(refused("--irq-poll-until resched").contains("stop rule"));
        assert!(refused("--defer-hard-irqs 2").contains("NAPI's deferral"));
        assert!(refused("--handler napi-defer --defer-hard-irqs 2").contains("defers nothing"));
        assert!(refused("--coalesce-disable 1").contains("not THR,TIME"));
        assert!(refused("--moderator gsim --handler napi-defer").contains("both mask"));
        // Pairs that mean something pass.
        for ok in [
            "--delivery posted --max-loop 5 --coalesce 7,1",
            "--handler irq-poll --budget 32 --weight 16 --flood-detection",
            "--moderator gsim --coalesce 7,1",
            "--delivery polled",
            "--delivery remapped --reap-after-submit --moderator net-dim",
            "--delivery posted --notification self-ipi",
            "--handler irq-poll --irq-poll-until resched",
            "--handler napi-defer --weight 16 --defer-hard-irqs 2 --gro-flush-timeout 20000",
            "--handler napi-defer",
            "--coalesce 7,1 --coalesce-disable 1,3-4",
        ] {
            let p = PolicyArgs::from_args(ok.split_whitespace()).unwrap();
            assert!(p.checked_policy().is_ok(), "{ok}");
        }
        assert!(parse_policy("--delivery polled --coalesce 7,1").is_err());
        let events = crate::EventArgs {
            events: vec![crate::events::parse_event("5ms:offline=cpu1").unwrap()],
        };
        let polled = PolicyArgs::from_args(["--delivery", "polled"]).unwrap();
        let e = event_contradictions(&polled, &events)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--event") && e.contains("raises none"), "{e}");
        assert!(event_contradictions(&PolicyArgs::default(), &events).is_ok());
    }

    #[test]
    fn the_new_options_reach_the_core_policy() {
        let p = parse_policy(
            "--delivery posted --notification preemptable --coalesce 3,1 --coalesce-disable 2-3",
        )
        .unwrap();
        assert_eq!(p.delivery, Delivery::PostedPreemptable { max_loop: 3 });
        assert_eq!(p.coalescing_disable.ivs().collect::<Vec<_>>(), [2, 3]);
        let p = parse_policy("--handler irq-poll --irq-poll-until resched").unwrap();
        assert_eq!(p.irq_poll_until, IrqPollUntil::Resched);
        let p =
            parse_policy("--handler napi-defer --defer-hard-irqs 2 --gro-flush-timeout 9").unwrap();
        assert_eq!(
            p.handler,
            HandlerStyle::NapiDefer {
                weight: 64,
                defer_hard_irqs: 2,
                gro_flush_timeout_ns: 9
            }
        );
        for bad in ["0", "3-1", "x", "2048"] {
            let e = parse_coalesce_disable(bad).unwrap_err();
            assert!(e.contains(bad), "{e}");
        }
        assert!(parse_coalesce_disable("none").unwrap().is_empty());
    }

    #[test]
    fn options_written_out_parse_back_to_the_same_choices() {
        let mut p = PolicyArgs::default();
        for (k, v) in [
            ("delivery", "posted"),
            ("max-loop", "5"),
            ("coalesce", "7,1"),
            ("moderator", "net-dim"),
            ("handler", "irq-poll"),
            ("budget", "32"),
            ("flood_detection", "on"),
            ("notification", "self-ipi"),
            ("coalesce_disable", "1,4"),
            ("irq_poll_until", "resched"),
        ] {
            PolicyKey::named(k).unwrap().apply(&mut p, v).unwrap();
        }
        let back = PolicyArgs::from_args(p.to_args()).unwrap();
        assert_eq!(back, p);
        assert_ne!(back, PolicyArgs::default());
        assert_eq!(
            parse_policy("--delivery posted --max-loop 5")
                .unwrap()
                .delivery,
            irqlab_core::Delivery::Posted { max_loop: 5 }
        );
        let e = parse_policy("--max-loop 0").unwrap_err().to_string();
        assert!(
            e.starts_with("policy \"--max-loop 0\": ") && e.contains("max-loop"),
            "{e}"
        );
    }
}
