//! The ledger through the loader: shared tables beside a platform file, cycles at the
//! platform's frequency, table < file < --set, provenance shared by the same part in an
//! array, range warnings, and errors that name the file, line and key.

use irqlab_sim::Platform;
use irqlab_sim::ledger::{self, Origin, SourceKind, TableKind};
use std::path::PathBuf;

/// A directory with two shared tables and a platform naming them.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("irqlab-ledger-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("cpus")).unwrap();
    std::fs::create_dir_all(dir.join("kernels")).unwrap();
    std::fs::write(
        dir.join("cpus/core-x.toml"),
        "models = [\"chip-a\", \"chip-b\"]\n[cpu]\n\
         irq_entry_ns = { cycles = 750, source = \"estimate\", range = [300, 1500], note = \"n\" }\n\
         ipi_ns = { value = 1500, source = \"physics\" }\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("kernels/9.9.toml"),
        "[kernel]\ncqe_ns = { cycles = 150, source = \"kernel\", cite = \"drivers/nvme/host/pci.c\" }\n\
         irq_am_nr_events = { value = 32, source = \"kernel\" }\n",
    )
    .unwrap();
    std::fs::write(dir.join("p.toml"), PLATFORM).unwrap();
    dir
}

/// A platform naming both tables; the keys they hold are left out.
const PLATFORM: &str = r#"name = "p"
[cpu]
count = 16
model = "chip-a"
ghz = { value = 3.0, source = "datasheet" }
irq_exit_ns = 150
eoi_ns = 50
idle_exit_ns = 500
ctx_switch_ns = 1000
wakeup_ns = 400
tick_hz = 1000
tick_ns = 4000
sched_slice_ns = 3000000
[kernel]
version = "9.9"
complete_io_ns = 300
cq_doorbell_ns = 150
sq_doorbell_ns = 150
mmio_flight_ns = 500
poll_check_ns = 80
pir_round_ns = 100
irq_poll_call_ns = 100
softirq_ns = 200
irq_thread_ns = 500
hrtimer_ns = 400
[iommu]
dma_translate_ns = 5
[uncore]
stack_rtt_ns = 65
pid_ns = { value = 90, source = "fit", pins = ["c1/x"], range = [10, 80] }
[[root_ports]]
name = "rp0"
write_ns = 10
bytes_per_ns = 25.0
msi_ns = 10
[[devices]]
kind = "nvme"
prefix = "nvme"
count = 4
port = "rp0"
queues = 0
queue_depth = 1024
max_iops = 1000000.0
read_ns = 80000
write_ns = 20000
service_cv = 0.3
sqe_fetch_ns = 600
cqe_bytes = 16
"#;

#[test]
fn tables_give_values_at_the_platforms_frequency() {
    let dir = scratch("freq");
    let r = ledger::load(&dir.join("p.toml"), &[]).unwrap();
    assert_eq!(r.platform.cpu.irq_entry_ns, 250); // 750 cycles at 3 GHz
    assert_eq!(r.platform.kernel.cqe_ns, 50);
    assert_eq!(r.platform.cpu.ipi_ns, 1500);
    assert_eq!(r.platform.kernel.irq_am_nr_events, 32);
    assert_eq!(r.mhz, Some(3000));
    let e = r.ledger.get("cpu.irq_entry_ns").unwrap();
    assert_eq!(e.cycles, Some(750));
    assert_eq!(
        e.origin,
        Origin::Table {
            table: TableKind::Cpu,
            name: "core-x".into()
        }
    );
    assert!(
        e.location().ends_with("cpus/core-x.toml:3"),
        "{}",
        e.location()
    );
    assert_eq!(r.tables.len(), 2);
    assert_eq!(r.tables[0].selected_by, "chip-a");
    // The same core at another frequency: --set cpu.ghz rescales the cycles.
    let r2 = ledger::load(&dir.join("p.toml"), &["cpu.ghz=2.5".into()]).unwrap();
    assert_eq!(r2.platform.cpu.irq_entry_ns, 300);
    assert_eq!(r2.ledger.get("cpu.ghz").unwrap().origin, Origin::Set);
    // A bare value written in the file is unsourced; a default has its provenance.
    let bare = r.ledger.get("cpu.eoi_ns").unwrap();
    assert_eq!(
        (bare.origin.clone(), bare.provenance.is_none()),
        (Origin::PlatformFile, true)
    );
    let d = r.ledger.get("kernel.moderation_program_ns").unwrap();
    assert_eq!(d.origin, Origin::Default);
    assert_eq!(d.provenance.as_ref().unwrap().source, SourceKind::Estimate);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn file_overrides_table_and_set_overrides_file() {
    let dir = scratch("order");
    let text = std::fs::read_to_string(dir.join("p.toml"))
        .unwrap()
        .replace(
            "eoi_ns = 50\n",
            "irq_entry_ns = { value = 200, source = \"measured\", machine = \"m1\" }\neoi_ns = 50\n",
        );
    std::fs::write(dir.join("p.toml"), text).unwrap();
    let r = ledger::load(&dir.join("p.toml"), &["kernel.cqe_ns=77".into()]).unwrap();
    assert_eq!(r.platform.cpu.irq_entry_ns, 200);
    let e = r.ledger.get("cpu.irq_entry_ns").unwrap();
    assert_eq!(e.origin, Origin::PlatformFile);
    assert_eq!(e.replaced.as_ref().unwrap().cycles, Some(750));
    assert_eq!(r.platform.kernel.cqe_ns, 77);
    let s = r.ledger.get("kernel.cqe_ns").unwrap();
    assert_eq!(s.origin, Origin::Set);
    assert!(matches!(
        s.replaced.as_ref().unwrap().origin,
        Origin::Table { .. }
    ));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn values_outside_their_range_are_warned_about() {
    let dir = scratch("range");
    let r = ledger::load(&dir.join("p.toml"), &[]).unwrap();
    assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
    assert!(
        r.warnings[0].contains("uncore.pid_ns = 90 is outside its plausible range 10..80"),
        "{}",
        r.warnings[0]
    );
    // A --set is judged against the range of the value it replaces (cycles in ns).
    let r = ledger::load(&dir.join("p.toml"), &["cpu.irq_entry_ns=900".into()]).unwrap();
    assert!(
        r.warnings
            .iter()
            .any(|w| w
                .starts_with("--set cpu.irq_entry_ns=900: outside the plausible range 100..500")),
        "{:?}",
        r.warnings
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn repeated_parts_share_the_first_ones_provenance() {
    let dir = scratch("share");
    let text = std::fs::read_to_string(dir.join("p.toml"))
        .unwrap()
        .replace(
            "max_iops = 1000000.0\n",
            "max_iops = { value = 1000000.0, source = \"datasheet\" }\n",
        );
    let text = format!(
        "{text}\n[[devices]]\nkind = \"nvme\"\nprefix = \"nvme\"\ncount = 1\nport = \"rp0\"\nqueues = 0\nqueue_depth = 1024\n\
         max_iops = 1000000.0\nread_ns = 80000\nwrite_ns = 20000\nservice_cv = 0.3\nsqe_fetch_ns = 600\ncqe_bytes = 16\n\
         [[devices]]\nkind = \"nvme\"\nprefix = \"nvme\"\ncount = 1\nport = \"rp0\"\nqueues = 0\nqueue_depth = 1024\n\
         max_iops = 2000000.0\nread_ns = 80000\nwrite_ns = 20000\nservice_cv = 0.3\nsqe_fetch_ns = 600\ncqe_bytes = 16\n"
    );
    std::fs::write(dir.join("p.toml"), text).unwrap();
    let r = ledger::load(&dir.join("p.toml"), &[]).unwrap();
    let same = r.ledger.get("devices.1.max_iops").unwrap();
    assert_eq!(same.shared_from.as_deref(), Some("devices.0.max_iops"));
    assert_eq!(
        same.provenance.as_ref().unwrap().source,
        SourceKind::Datasheet
    );
    // Another value is another part: unsourced.
    assert!(
        r.ledger
            .get("devices.2.max_iops")
            .unwrap()
            .provenance
            .is_none()
    );
    assert_eq!(
        r.ledger.same_part("devices.0.max_iops"),
        vec![
            "devices.0.max_iops".to_string(),
            "devices.1.max_iops".to_string()
        ]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn table_problems_name_the_file_line_and_key() {
    let dir = scratch("errors");
    let p = dir.join("p.toml");
    let err = |sets: &[&str]| {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        Platform::load(&p, &sets).unwrap_err().to_string()
    };
    let e = err(&["cpu.model=chip-z"]);
    assert!(
        e.contains("cpu.model = \"chip-z\"") && e.contains("chip-a, chip-b"),
        "{e}"
    );
    let e = err(&["kernel.version=1.0"]);
    assert!(
        e.contains("kernel.version = \"1.0\"") && e.contains("versions there: 9.9"),
        "{e}"
    );
    let e = err(&["cpu.ghz=2.71234"]);
    assert!(
        e.contains("cpu.ghz") && e.contains("whole number of MHz"),
        "{e}"
    );
    // A key in two tables.
    std::fs::write(
        dir.join("kernels/9.9.toml"),
        "[cpu]\nirq_entry_ns = { value = 1, source = \"kernel\" }\n",
    )
    .unwrap();
    let e = err(&[]);
    assert!(
        e.contains("cpu.irq_entry_ns is in two shared tables"),
        "{e}"
    );
    // A value of the wrong type in a table: its file and line.
    std::fs::write(
        dir.join("kernels/9.9.toml"),
        "[kernel]\n\ncqe_ns = { value = \"fast\", source = \"kernel\" }\n",
    )
    .unwrap();
    let e = err(&[]);
    assert!(
        e.contains("kernels/9.9.toml:3: kernel.cqe_ns: \"fast\" (text) is not a whole number"),
        "{e}"
    );
    // Text without a directory cannot name a table.
    let text = std::fs::read_to_string(&p).unwrap();
    let e = Platform::from_toml(&text, "t.toml", &[])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("t.toml:") && e.contains("load it from its file"),
        "{e}"
    );
    // Cycles need a frequency.
    let no_ghz = text.replace("ghz = { value = 3.0, source = \"datasheet\" }\n", "");
    assert_ne!(no_ghz, text);
    std::fs::write(&p, no_ghz).unwrap();
    let e = err(&[]);
    assert!(
        e.contains(
            "cpus/core-x.toml:3: cpu.irq_entry_ns: cycles = 750 needs the platform's frequency"
        ),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_resolved_platform_travels_as_plain_text() {
    let dir = scratch("flat");
    let p = Platform::load(&dir.join("p.toml"), &[]).unwrap();
    let back = Platform::from_toml(&p.to_toml().unwrap(), "flat", &[]).unwrap();
    assert_eq!(p, back);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_uncore_table_gives_two_machines_one_value() {
    let dir = scratch("uncore");
    std::fs::create_dir_all(dir.join("uncores")).unwrap();
    std::fs::write(
        dir.join("uncores/mesh-x.toml"),
        "models = [\"chip-a\", \"chip-b\"]\n[uncore]\n\
         ubox_ns = { value = 157, source = \"fit\", pins = [\"c1/a\", \"v2/b\"], range = [120, 200] }\n\
         pid_ns = { value = 135, source = \"estimate\" }\n",
    )
    .unwrap();
    let text = std::fs::read_to_string(dir.join("p.toml"))
        .unwrap()
        .replace(
            "[uncore]\nstack_rtt_ns = 65\npid_ns = { value = 90, source = \"fit\", pins = [\"c1/x\"], range = [10, 80] }",
            "[uncore]\nmodel = \"chip-b\"\nstack_rtt_ns = { value = 80, source = \"estimate\" }",
        );
    std::fs::write(dir.join("p.toml"), &text).unwrap();
    let r = ledger::load(&dir.join("p.toml"), &[]).unwrap();
    assert_eq!(r.platform.uncore.ubox_ns, 157);
    assert_eq!(r.platform.uncore.pid_ns, 135);
    assert_eq!(r.platform.uncore.stack_rtt_ns, 80);
    let e = r.ledger.get("uncore.ubox_ns").unwrap();
    assert_eq!(
        e.origin,
        Origin::Table {
            table: TableKind::Uncore,
            name: "mesh-x".into()
        }
    );
    assert!(r.tables.iter().any(|t| t.selected_by == "chip-b"));
    let e = Platform::load(&dir.join("p.toml"), &["uncore.model=chip-z".into()])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("uncore.model = \"chip-z\"") && e.contains("models there: chip-a, chip-b"),
        "{e}"
    );
    // A retired key in a table is refused there, naming its replacement.
    std::fs::write(
        dir.join("uncores/mesh-x.toml"),
        "models = [\"chip-b\"]\n[iommu]\nremap_ns = { value = 20, source = \"estimate\" }\n",
    )
    .unwrap();
    let e = Platform::load(&dir.join("p.toml"), &[])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("mesh-x.toml:3: iommu.remap_ns") && e.contains("uncore.stack_rtt_ns"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
