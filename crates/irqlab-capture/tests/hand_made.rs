//! A capture laid out by hand (lscpu.txt; NAME.json, NAME.irq0, NAME.irq1 per run) is
//! read, and each way such a directory can be wrong is refused with the file and what
//! was expected there.

mod common;

use common::{Scratch, fixture};
use irqlab_capture::{Capture, CaptureError, DeviceKind};

#[test]
fn a_hand_made_layout_gives_topology_devices_and_per_run_interrupts() {
    let c = Capture::open(&fixture("hand-made")).unwrap();
    assert!(c.manifest.is_none());
    let t = &c.host.topology;
    assert_eq!(
        (t.cpus(), t.cores, t.sockets, t.model),
        (4, 4, 1, Some(106))
    );
    // The NVMe controller is told from its vector names; the admin queue is not an I/O vector.
    assert_eq!(c.host.devices.len(), 1);
    let d = &c.host.devices[0];
    assert_eq!((d.name.as_str(), d.kind), ("nvme0", DeviceKind::Nvme));
    let irqs: Vec<u32> = d.vectors.iter().map(|v| v.irq).collect();
    assert_eq!(irqs, vec![121, 122, 123, 124]);
    assert_eq!(c.runs.len(), 2);
    let qd1 = c.run("qd1").unwrap();
    // fio's disk_util names nvme0n1: the run is attributed to nvme0.
    assert_eq!(qd1.device.as_deref(), Some("nvme0"));
    assert_eq!(qd1.interrupts, 20_000);
    assert_eq!(qd1.interrupts_per_cpu(), vec![20_000, 0, 0, 0]);
    assert_eq!(qd1.interrupts_per_s, 10_000.0);
    assert_eq!(qd1.ios_per_interrupt, Some(1.0));
    assert_eq!(qd1.device_ios_per_interrupt, Some(20_010.0 / 20_000.0));
    assert_eq!(qd1.summary.clat_p99_us, Some(120.0));
    assert!(qd1.summary.percentiles_exact);
    assert_eq!(qd1.cpu_pct(), 25.0);
    // The Ethernet vector and LOC moved too, but they are not the disk's.
    let qd32 = c.run("qd32").unwrap();
    assert_eq!(qd32.interrupts_per_cpu(), vec![0, 0, 50_000, 0]);
    assert_eq!(qd32.ios_per_interrupt, Some(8.0));
    assert_eq!(qd32.delta.row("LOC").unwrap().total(), 8_000);
    let text = irqlab_capture::show(&c);
    assert!(
        text.contains("laid out by hand") && text.contains("qd32") && text.contains("2:100%"),
        "{text}"
    );
}

#[test]
fn a_hand_made_layout_may_give_the_kernel_and_says_what_its_snapshots_show() {
    let c = Capture::open(&fixture("hand-made")).unwrap();
    // IR-PCI-MSIX chips: remapping in use; no PMN row; no uname.txt: no release.
    assert!(c.host.iommu.remapping_in_use && !c.host.iommu.posted_msi_row);
    assert_eq!(c.host.kernel.release, None);
    let s = Scratch::copy_of("hand-made");
    s.write(
        "uname.txt",
        "Linux emr-bkc 6.8.0-rc3+ #1 SMP x86_64 GNU/Linux\n",
    );
    s.write(
        "cmdline.txt",
        "BOOT_IMAGE=/vmlinuz ro intremap=posted_msi nvme.poll_queues=4\n",
    );
    let c = Capture::open(&s.0).unwrap();
    assert_eq!(c.host.kernel.release.as_deref(), Some("6.8.0-rc3+"));
    assert_eq!(
        c.host.kernel.options.get("intremap").map(String::as_str),
        Some("posted_msi")
    );
    s.write("uname.txt", "6.18.2\n");
    assert_eq!(
        Capture::open(&s.0).unwrap().host.kernel.release.as_deref(),
        Some("6.18.2")
    );
    s.write("uname.txt", "Darwin\n");
    says(
        &refused(&s),
        &["uname.txt", "not a kernel release", "uname -r"],
    );
}

/// Opens the broken copy and returns the message.
fn refused(s: &Scratch) -> String {
    match Capture::open(&s.0) {
        Ok(_) => panic!("{}: accepted", s.0.display()),
        Err(e) => e.to_string(),
    }
}

fn says(msg: &str, parts: &[&str]) {
    for p in parts {
        assert!(msg.contains(p), "'{p}' not in: {msg}");
    }
}

#[test]
fn missing_files_are_named_with_what_they_should_hold() {
    let s = Scratch::copy_of("hand-made");
    std::fs::remove_file(s.path("qd32.irq1")).unwrap();
    says(
        &refused(&s),
        &[
            "qd32.irq1: missing",
            "expected /proc/interrupts",
            "run qd32",
        ],
    );

    let s = Scratch::copy_of("hand-made");
    std::fs::remove_file(s.path("qd1.json")).unwrap();
    says(
        &refused(&s),
        &["qd1.json: missing", "expected fio's JSON result of run qd1"],
    );

    let s = Scratch::copy_of("hand-made");
    std::fs::remove_file(s.path("lscpu.txt")).unwrap();
    says(
        &refused(&s),
        &["no manifest.json and no lscpu.txt", "expected"],
    );

    let s = Scratch::new("empty");
    s.write(
        "lscpu.txt",
        &std::fs::read_to_string(fixture("hand-made/lscpu.txt")).unwrap(),
    );
    says(&refused(&s), &["no runs", "expected NAME.json"]);

    let nothing = Scratch::new("gone");
    let gone = nothing.path("nothing-here");
    let e = Capture::open(&gone).unwrap_err();
    assert!(matches!(e, CaptureError::Layout { .. }), "{e}");
}

#[test]
fn a_failed_or_empty_fio_run_is_refused() {
    let s = Scratch::copy_of("hand-made");
    s.write(
        "qd1.json",
        &s.read("qd1.json").replace("\"error\" : 0", "\"error\" : 5"),
    );
    says(
        &refused(&s),
        &[
            "qd1.json: a failed fio run",
            "job 'qd1' ended with error 5",
            "expected error 0",
        ],
    );

    let s = Scratch::copy_of("hand-made");
    s.write(
        "qd32.json",
        &s.read("qd32.json")
            .replace("\"total_ios\" : 400000", "\"total_ios\" : 0"),
    );
    says(
        &refused(&s),
        &["qd32.json: a failed fio run", "no job completed any I/O"],
    );
}

#[test]
fn garbage_json_and_text_from_another_tool_are_refused() {
    let s = Scratch::copy_of("hand-made");
    s.write("qd1.json", "{ \"jobs\": [ {\"jobname\": ");
    says(
        &refused(&s),
        &["qd1.json", "not JSON", "expected fio --output-format=json"],
    );

    let s = Scratch::copy_of("hand-made");
    s.write("qd1.json", "{\"hello\": 1}");
    says(&refused(&s), &["qd1.json", "no \"jobs\" array"]);

    let s = Scratch::copy_of("hand-made");
    s.write("lscpu.txt", "hw.ncpu: 4\nhw.model: Intel\n");
    says(&refused(&s), &["lscpu.txt", "expected the output of lscpu"]);

    let s = Scratch::copy_of("hand-made");
    std::fs::write(s.path("qd1.json"), b"\xff\xfe{}").unwrap();
    says(&refused(&s), &["qd1.json", "not valid UTF-8"]);
}

#[test]
fn a_capture_from_another_os_is_refused() {
    // FreeBSD's vmstat -i, the nearest thing it has to /proc/interrupts.
    let s = Scratch::copy_of("hand-made");
    s.write("qd1.irq0", "interrupt                          total       rate\nirq1: atkbd0                          10          0\ncpu0:timer                      123456       1000\nTotal                           123466       1000\n");
    says(
        &refused(&s),
        &["qd1.irq0", "expected a copy of Linux's /proc/interrupts"],
    );
}

#[test]
fn snapshots_swapped_or_of_different_boots_are_refused() {
    let s = Scratch::copy_of("hand-made");
    let (a, b) = (s.read("qd1.irq0"), s.read("qd1.irq1"));
    s.write("qd1.irq0", &b);
    s.write("qd1.irq1", &a);
    says(
        &refused(&s),
        &[
            "qd1.irq0 and",
            "qd1.irq1",
            "row 121 on CPU0 goes down from 21000 to 1000",
            "swapped, or a reboot",
        ],
    );

    // With irqlab's comment line, a reboot between the snapshots is told by the boot time.
    let s = Scratch::copy_of("hand-made");
    s.write(
        "qd1.irq0",
        &format!(
            "# irqlab snapshot: btime=1700000000 taken=1700000100.0\n{}",
            s.read("qd1.irq0")
        ),
    );
    s.write(
        "qd1.irq1",
        &format!(
            "# irqlab snapshot: btime=1700000500 taken=1700000600.0\n{}",
            s.read("qd1.irq1")
        ),
    );
    says(
        &refused(&s),
        &[
            "taken in different boots (btime 1700000000 and 1700000500)",
            "of one boot",
        ],
    );

    // Taken 0.5 s apart around a 2 s run: not this run's snapshots.
    let s = Scratch::copy_of("hand-made");
    s.write(
        "qd1.irq0",
        &format!(
            "# irqlab snapshot: btime=1 taken=100.0\n{}",
            s.read("qd1.irq0")
        ),
    );
    s.write(
        "qd1.irq1",
        &format!(
            "# irqlab snapshot: btime=1 taken=100.5\n{}",
            s.read("qd1.irq1")
        ),
    );
    says(&refused(&s), &["0.500 s apart", "fio ran for 2.000 s"]);

    // A CPU that went offline between them.
    let s = Scratch::copy_of("hand-made");
    let three: String = s
        .read("qd1.irq1")
        .lines()
        .map(|l| {
            let mut w: Vec<&str> = l.split_whitespace().collect();
            if w.len() >= 4 && !l.contains("ERR") {
                w.remove(if w[0].starts_with("CPU") { 3 } else { 4 });
            }
            w.join(" ") + "\n"
        })
        .collect();
    s.write("qd1.irq1", &three);
    says(&refused(&s), &["CPU columns differ"]);
}

#[test]
fn a_wrong_manifest_is_refused_with_the_schema_expected() {
    let s = Scratch::copy_of("hand-made");
    s.write("manifest.json", "{\"schema\": \"something-else/3\"}");
    says(
        &refused(&s),
        &[
            "manifest.json",
            "schema 'something-else/3'",
            "expected \"irqlab-capture/1\"",
        ],
    );
    s.write(
        "manifest.json",
        "{\"schema\": \"irqlab-capture/1\", \"host\": 5}",
    );
    says(
        &refused(&s),
        &["manifest.json", "expected irqlab's manifest"],
    );
    s.write("manifest.json", "[1, 2");
    says(&refused(&s), &["manifest.json", "not JSON"]);
}
