//! The host reader on a made-up /proc and /sys tree (an NVMe disk with poll queues
//! behind VT-d, a loop device to leave out), so what it finds can be checked exactly on
//! any machine.

mod common;

use common::Scratch;
use irqlab_capture::probe::Probe;
use irqlab_capture::{DeviceKind, host, interrupts};
use std::os::unix::fs::symlink;
use std::path::Path;

fn put(root: &Path, path: &str, text: &str) {
    let p = root.join(path);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn link(root: &Path, at: &str, to: &str) {
    let p = root.join(at);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    symlink(to, p).unwrap();
}

const INTERRUPTS: &str = "            CPU0       CPU1       CPU2       CPU3
  50:          5          0          0          0  IR-PCI-MSIX-0000:01:00.0    0-edge      nvme0q0
  51:        100          0          0          0  IR-PCI-MSIX-0000:01:00.0    1-edge      nvme0q1
  52:          0          0        200          0  IR-PCI-MSIX-0000:01:00.0    2-edge      nvme0q2
  60:          0          0          0          9  IR-PCI-MSIX-0000:02:00.0    1-edge      eth0
 LOC:         10         10         10         10   Local timer interrupts
 PMN:          0          0          0          0   Posted MSI notification event
";

fn tree(root: &Path) {
    put(root, "proc/interrupts", INTERRUPTS);
    put(
        root,
        "proc/cmdline",
        "BOOT_IMAGE=/vmlinuz ro intremap=posted_msi nvme.poll_queues=2 threadirqs quiet -- isolcpus=1\n",
    );
    put(root, "proc/stat", "cpu 1 2 3\nbtime 42\n");
    put(
        root,
        "proc/cpuinfo",
        "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 207\nmodel name\t: Intel(R) Xeon(R) Platinum 8592+\nstepping\t: 2\ncpu MHz\t\t: 1900.000\nflags\t\t: fpu apic\n\n",
    );
    put(root, "proc/sys/kernel/osrelease", "6.12.0\n");
    put(root, "proc/sys/kernel/hostname", "box\n");
    put(root, "proc/irq/51/effective_affinity_list", "0\n");
    put(root, "proc/irq/51/smp_affinity_list", "0-1\n");
    put(root, "proc/irq/52/effective_affinity_list", "2\n");
    put(root, "proc/irq/52/smp_affinity_list", "2-3\n");
    put(root, "sys/devices/system/cpu/online", "0-3\n");
    put(root, "sys/devices/system/node/online", "0\n");
    for cpu in 0..4 {
        let base = format!("sys/devices/system/cpu/cpu{cpu}");
        put(
            root,
            &format!("{base}/topology/core_id"),
            &format!("{}\n", cpu / 2),
        );
        put(root, &format!("{base}/topology/physical_package_id"), "0\n");
        put(
            root,
            &format!("{base}/cpufreq/scaling_cur_freq"),
            "2000000\n",
        );
        put(
            root,
            &format!("{base}/cpufreq/cpuinfo_max_freq"),
            "3900000\n",
        );
        std::fs::create_dir_all(root.join(format!("{base}/node0"))).unwrap();
    }
    let pci = "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0";
    put(
        root,
        &format!("{pci}/current_link_speed"),
        "16.0 GT/s PCIe\n",
    );
    put(root, &format!("{pci}/current_link_width"), "4\n");
    put(root, &format!("{pci}/max_link_speed"), "16.0 GT/s PCIe\n");
    put(root, &format!("{pci}/max_link_width"), "4\n");
    put(root, &format!("{pci}/numa_node"), "0\n");
    for irq in [50, 51, 52] {
        put(root, &format!("{pci}/msi_irqs/{irq}"), "msix\n");
    }
    std::fs::create_dir_all(root.join("sys/bus/pci/drivers/nvme")).unwrap();
    link(
        root,
        &format!("{pci}/driver"),
        "../../../../bus/pci/drivers/nvme",
    );
    let ctrl = format!("{pci}/nvme/nvme0");
    link(root, &format!("{ctrl}/device"), "../../../0000:01:00.0");
    let disk = format!("{ctrl}/nvme0n1");
    link(root, &format!("{disk}/device"), "../../nvme0");
    put(root, &format!("{disk}/size"), "2000000\n");
    put(root, &format!("{disk}/queue/io_poll"), "1\n");
    put(
        root,
        &format!("{disk}/queue/scheduler"),
        "[none] mq-deadline\n",
    );
    put(root, &format!("{disk}/queue/nr_requests"), "1023\n");
    put(root, &format!("{ctrl}/model"), "Fast Disk 9000\n");
    for (q, cpus) in [(0, "0-1"), (1, "2-3"), (2, "0-1"), (3, "2-3")] {
        put(
            root,
            &format!("{disk}/mq/{q}/cpu_list"),
            &format!("{cpus}\n"),
        );
    }
    link(
        root,
        "sys/block/nvme0n1",
        "../devices/pci0000:00/0000:00:01.0/0000:01:00.0/nvme/nvme0/nvme0n1",
    );
    std::fs::create_dir_all(root.join("sys/devices/virtual/block/loop0")).unwrap();
    link(root, "sys/block/loop0", "../devices/virtual/block/loop0");
    put(
        root,
        "sys/class/iommu/dmar0/intel-iommu/cap",
        "d2008c40660462\n",
    );
    put(root, "sys/class/iommu/dmar0/intel-iommu/ecap", "f050da\n");
    put(root, "sys/firmware/acpi/tables/DMAR", "");
}

#[test]
fn an_nvme_disk_behind_vt_d_is_read_with_queues_vectors_and_poll_queues() {
    let s = Scratch::new("sysfs");
    tree(&s.0);
    let p = Probe::at(&s.0);
    let rest = interrupts::parse(INTERRUPTS).unwrap();
    let h = host::read(&p, Some(&rest));
    assert_eq!(h.hostname.as_deref(), Some("box"));
    let t = &h.topology;
    assert_eq!(
        (t.cpus(), t.cores, t.threads_per_core, t.sockets),
        (4, 2, 2, 1)
    );
    assert_eq!((t.mhz, t.max_mhz), (Some(2000.0), Some(3900.0)));
    assert_eq!(t.model, Some(207));
    assert!(!t.virtualized);
    let k = &h.kernel;
    assert_eq!(
        k.options.get("intremap").map(String::as_str),
        Some("posted_msi")
    );
    assert_eq!(
        k.options.get("nvme.poll_queues").map(String::as_str),
        Some("2")
    );
    assert!(k.options.contains_key("threadirqs") && !k.options.contains_key("isolcpus"));
    assert_eq!(k.btime, Some(42));
    assert!(h.iommu.remapping_in_use && h.iommu.posted_msi_row);
    assert_eq!(h.iommu.acpi_tables, vec!["DMAR"]);
    assert_eq!(h.iommu.units[0].remapping, Some(true));
    // The loop device is virtual: left out.
    assert_eq!(h.devices.len(), 1);
    let d = &h.devices[0];
    assert_eq!(
        (d.name.as_str(), d.kind, d.driver.as_deref()),
        ("nvme0n1", DeviceKind::Nvme, Some("nvme"))
    );
    assert_eq!(d.irq_prefix.as_deref(), Some("nvme0"));
    assert_eq!(d.size_bytes, Some(2_000_000 * 512));
    assert_eq!(d.scheduler.as_deref(), Some("none"));
    let pci = d.pci.as_ref().unwrap();
    assert_eq!(
        (pci.address.as_str(), pci.current_link_width.as_deref()),
        ("0000:01:00.0", Some("4"))
    );
    assert_eq!(d.queues.len(), 4);
    assert_eq!(d.queues[1].cpus, vec![2, 3]);
    // Two vectors (the admin queue and eth0 are not the disk's I/O vectors) for four hctxs: two poll queues.
    let v: Vec<(u32, Option<u32>, Vec<u32>)> = d
        .vectors
        .iter()
        .map(|v| (v.irq, v.queue, v.effective_cpus.clone()))
        .collect();
    assert_eq!(v, vec![(51, Some(0), vec![0]), (52, Some(1), vec![2])]);
    assert_eq!(d.vectors[1].affinity_cpus, vec![2, 3]);
    assert_eq!(d.poll_queues, 2);
    let src = p.sources();
    assert!(
        src.read
            .contains(&"/proc/irq/*/effective_affinity_list".to_string()),
        "{src:?}"
    );
    assert!(src.unreadable.iter().any(|u| u.contains("dmi")), "{src:?}");
}
