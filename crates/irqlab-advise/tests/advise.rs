//! advise on the published rigs and on captured machines: which policies are offered
//! where, and what is recommended for the seed machine of the posted-MSI thread.

use irqlab_advise::{Constraints, Objective, Request};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn request(job: &Path, platform: irqlab_sim::ledger::Resolved, window_ns: u64) -> Request {
    Request {
        job_text: std::fs::read_to_string(job).unwrap(),
        job_name: job.display().to_string(),
        platform,
        objective: Objective::Iops,
        constraints: Constraints::default(),
        window_ns,
        seed: 1,
        threads: 2,
        budget: irqlab_sim::Budget::DEFAULT,
        only: None,
        maps: Vec::new(),
    }
}

fn names(plan: &irqlab_advise::Plan) -> Vec<String> {
    plan.candidates.iter().map(|c| c.name.clone()).collect()
}

#[test]
fn the_c1_platform_offers_posted_msi_and_one_without_posting_does_not() {
    let job = root().join("scenarios/c1/randread-libaio.fio");
    let spr = irqlab_sim::ledger::load(&root().join("platforms/spr-gen5.toml"), &[]).unwrap();
    let plan = irqlab_advise::plan(&request(&job, spr, 2_000_000)).unwrap();
    let n = names(&plan);
    assert!(n.contains(&"posted".to_string()), "{n:?}");
    assert!(n.contains(&"coalesce-16".to_string()), "{n:?}");
    // libaio cannot poll: polling is not offered, and the reason says so.
    assert!(!n.contains(&"polled".to_string()));
    assert!(
        plan.excluded
            .iter()
            .any(|e| e.name.starts_with("polled") && e.why.contains("libaio"))
    );
    let knob = &plan
        .candidates
        .iter()
        .find(|c| c.name == "posted")
        .unwrap()
        .knob;
    assert!(knob.contains("intremap=posted_msi"), "{knob}");
    // An IOMMU that does not post (a capture with no interrupt remapping).
    let none = irqlab_sim::ledger::load(
        &root().join("platforms/spr-gen5.toml"),
        &["uncore.pid_ns=0".to_string()],
    )
    .unwrap();
    let plan = irqlab_advise::plan(&request(&job, none, 2_000_000)).unwrap();
    assert!(!names(&plan).contains(&"posted".to_string()));
    assert!(
        plan.excluded
            .iter()
            .any(|e| e.name == "posted" && e.why.contains("post"))
    );
}

#[test]
fn an_io_uring_job_may_poll_and_the_ranking_follows_the_objective() {
    let dir = std::env::temp_dir().join(format!("irqlab-advise-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let job = dir.join("uring.fio");
    std::fs::write(
        &job,
        "[global]\nfilename=/data/f\nrw=randread\nbs=4k\ndirect=1\nioengine=io_uring\niodepth=8\ncpus_allowed=0\n[j]\n",
    )
    .unwrap();
    let example = irqlab_sim::ledger::load(&root().join("platforms/example.toml"), &[]).unwrap();
    let mut req = request(&job, example, 3_000_000);
    req.only = Some(vec!["polled".into(), "hybrid".into(), "posted".into()]);
    let a = irqlab_advise::advise(&req, &|| {}).unwrap();
    let n: Vec<&str> = a.rows.iter().map(|r| r.candidate.name.as_str()).collect();
    assert_eq!(n.len(), 4, "{n:?}");
    assert!(
        a.notes.iter().any(|x| x.contains("/data/f -> nvme0")),
        "{:?}",
        a.notes
    );
    // Ranked by IOPS, best first.
    assert!(
        a.rows
            .windows(2)
            .all(|w| w[0].figures.iops >= w[1].figures.iops)
    );
    // Polled delivery raises no interrupt.
    assert_eq!(a.row("polled").unwrap().figures.interrupts_per_s, 0.0);
    req.objective = Objective::Cpu;
    let c = irqlab_advise::advise(&req, &|| {}).unwrap();
    assert!(
        c.rows
            .windows(2)
            .all(|w| w[0].figures.cpu_per_io_us <= w[1].figures.cpu_per_io_us)
    );
    // A latency limit nothing meets is said so.
    req.constraints.max_p99_us = Some(0.001);
    let d = irqlab_advise::advise(&req, &|| {}).unwrap();
    assert!(
        d.verdict.starts_with("no candidate meets the constraints"),
        "{}",
        d.verdict
    );
    let json = irqlab_advise::json(&a);
    let back: serde_json::Value = serde_json::from_str(&json.to_string()).unwrap();
    assert_eq!(back["rows"].as_array().unwrap().len(), 4);
    assert_eq!(
        back["recommendation"]["candidate"],
        a.best().candidate.name.as_str()
    );
    let png = dir.join("c.png");
    irqlab_advise::chart(&a, &png).unwrap();
    assert_eq!(&std::fs::read(&png).unwrap()[..4], b"\x89PNG");
    assert!(
        irqlab_advise::chart(&a, &dir.join("c.gif"))
            .unwrap_err()
            .to_string()
            .contains(".png or .svg")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Jacob Pan's four-disk Emerald Rapids host, from the capture written by hand from his
/// mails: the platform built from its stock and polled runs, then advise on his job.
/// Published: 1.615M IOPS per disk stock, 2.184M posted (+35%).
#[test]
fn the_posted_msi_seed_machine_gets_posted_msi_with_about_the_published_gain() {
    let cap =
        irqlab_capture::Capture::open(&root().join("crates/irqlab-capture/tests/fixtures/emr-bkc"))
            .unwrap();
    let mut opts = irqlab_fromcapture::Options::new(root().join("platforms"));
    opts.max_evals = 30;
    opts.ios_per_run = 2000;
    opts.min_window_ns = 4_000_000;
    let b =
        irqlab_fromcapture::build(&cap, &opts, &mut irqlab_calib::Threads(2), &mut |_| {}).unwrap();
    let job = root().join("crates/irqlab-capture/tests/fixtures/emr-bkc/aio-stock.fio");
    let mut req = request(&job, b.resolved.clone(), 6_000_000);
    req.only = Some(vec!["posted".into()]);
    let a = irqlab_advise::advise(&req, &|| {}).unwrap();
    println!("{}", irqlab_advise::text(&a));
    assert_eq!(a.best().candidate.name, "posted");
    let stock = a.row("stock").unwrap().figures.iops / 4.0;
    let posted = a.row("posted").unwrap().figures.iops / 4.0;
    assert!(
        (stock / 1.615e6 - 1.0).abs() < 0.05,
        "stock {stock} per disk"
    );
    assert!(
        (posted / 2.184e6 - 1.0).abs() < 0.10,
        "posted {posted} per disk"
    );
    let gain = a.best().gain;
    assert!((0.25..0.45).contains(&gain), "gain {gain}");
    // Its costs: the socket's delivery fitted to this machine, its ceiling measured.
    assert!(a.confidence.machine >= 2, "{}", a.confidence.summary());
}

/// A cloud-style VM (the development VM's capture: a Firecracker guest with one
/// virtio-blk queue): posted MSI is not offered, and the reason says it is bare-metal
/// only; nothing else is offered that the model refuses on a virtio-blk disk.
#[test]
fn a_cloud_vm_capture_is_not_offered_posted_msi() {
    let cap = irqlab_capture::Capture::open(
        &root().join("crates/irqlab-capture/tests/fixtures/dev-vm-2vcpu"),
    )
    .unwrap();
    let mut opts = irqlab_fromcapture::Options::new(root().join("platforms"));
    opts.max_evals = 12;
    opts.ios_per_run = 1000;
    let b =
        irqlab_fromcapture::build(&cap, &opts, &mut irqlab_calib::Threads(2), &mut |_| {}).unwrap();
    let job = root().join("crates/irqlab-capture/tests/fixtures/dev-vm-2vcpu/qd32-libaio.fio");
    let req = request(&job, b.resolved.clone(), 5_000_000);
    let plan = irqlab_advise::plan(&req).unwrap();
    assert!(!names(&plan).contains(&"posted".to_string()));
    let why = &plan
        .excluded
        .iter()
        .find(|e| e.name == "posted")
        .unwrap()
        .why;
    assert!(
        why.contains("bare-metal only") && why.contains("guest"),
        "{why}"
    );
    let a = irqlab_advise::run(&req, plan, &|| {}).unwrap();
    assert_eq!(a.best().candidate.name, "stock");
    assert!(a.confidence.machine >= 1, "{}", a.confidence.summary());
}
