//! `irqlab sweep`: simulate a grid of parameter values in parallel on every core, then
//! write a CSV with one row per point, plots (PNG and SVG) and a table.
//!
//! Keys may be policy options (delivery, max_loop, coalesce, moderator, handler, budget,
//! weight, reap_after_submit, flood_detection; parsed by the same rules as `irqlab run`),
//! `seed`, fio options of every job (`job.iodepth`) or platform parameters
//! (`devices.0.count`, through the platform's own overrides).

mod fio_dir;
mod grid;
mod metrics;
mod output;

use crate::policy_args::PolicyArgs;
use crate::progress::Progress;
use clap::Args;
use grid::{Grid, KeyKind};
use irqlab_fio::JobSpec;
use irqlab_sim::{Platform, SimOptions};
use output::PointResult;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

#[derive(Debug, Args)]
pub struct SweepArgs {
    /// The fio job file.
    pub job: PathBuf,
    /// Platform file, or a bare name (e.g. "example") for platforms/NAME.toml.
    #[arg(long)]
    pub platform: String,
    /// Base policy; swept policy keys override it.
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// What to vary: KEY=A..B (integers), KEY=A..B:STEP, KEY=A..B:*FACTOR or
    /// KEY=v1,v2,...; a single value fixes a key. Repeatable; the grid is the cartesian
    /// product, the first --set varying slowest.
    #[arg(long = "set", value_name = "KEY=VALUES", required = true)]
    pub sets: Vec<String>,
    /// Seed of every random stream of every point, the jobs' randseed included (unless
    /// `seed` is swept).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Metric to plot and print (repeatable; one plot each): iops, iops_per_device,
    /// bw_MiBps, clat_mean_us, clat_p50_us, clat_p99_us, interrupts_per_sec,
    /// notifications_per_sec, pmn_per_sec, msi_per_sec, ios_per_notification,
    /// coalescing_ratio, cpu_busy_pct, irq_cpu_pct, ctx_switches_per_sec, duration_ms.
    /// The CSV always has them all. Default: iops.
    #[arg(long = "metric", value_name = "NAME")]
    pub metrics: Vec<String>,
    /// The swept key along the x axis (default: the first numeric swept key).
    #[arg(long, value_name = "KEY")]
    pub x: Option<String>,
    /// Directory for sweep.csv and METRIC.png/METRIC.svg per metric (default
    /// sweep-JOBNAME, unless --csv or --plot is given).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Write the CSV here.
    #[arg(long, value_name = "FILE.csv")]
    pub csv: Option<PathBuf>,
    /// Write the plot here, as PNG and SVG (FILE.png and FILE.svg).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Also write every point's fio JSON (json+) and fio log files here, laid out as
    /// fio-plot's bench-fio does, so fio-plot draws its graphs from the sweep (see the
    /// README); points differing in more than job.iodepth and job.numjobs get their own
    /// subdirectory.
    #[arg(long, value_name = "DIR")]
    pub fio_dir: Option<PathBuf>,
    /// Simulations run at once (default: every core).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: Option<u32>,
    /// The budget of every point (each point is checked on its own).
    #[command(flatten)]
    pub budget: crate::budget_args::BudgetArgs,
}

pub fn main(args: SweepArgs) -> Result<(), String> {
    let metrics = chosen_metrics(&args.metrics)?;
    let plan = Plan::new(&args)?;
    let x = output::x_dim(&plan.grid, args.x.as_deref())?;
    let progress = Progress::new(plan.grid.len() as u64, "sweep");
    let threads = args
        .threads
        .map_or_else(default_threads, |n| n as usize)
        .min(plan.grid.len())
        .max(1);
    let results = plan.run(threads, &progress);
    progress.finish();
    let results = results?;

    let files = Outputs::of(&args)?;
    let csv = output::csv(&plan.grid, &results);
    write(&files.csv, csv.as_bytes())?;
    let mut written = vec![files.csv.display().to_string()];
    match x {
        None => {
            eprintln!("irqlab: no swept key is numeric: no plot (use --x KEY with a numeric key)")
        }
        Some(x) => {
            let context = plan.context();
            for (k, &m) in metrics.iter().enumerate() {
                let stem = files.plot_stem(k, metrics::METRICS[m].name);
                let plot = output::plot(&plan.grid, &results, x, m, &context);
                for ext in ["png", "svg"] {
                    let path = stem.with_extension(ext);
                    let res = if ext == "png" {
                        irqlab_plot::write_png(&plot, &path)
                    } else {
                        irqlab_plot::write_svg(&plot, &path)
                    };
                    res.map_err(|e| e.to_string())?;
                    written.push(path.display().to_string());
                }
            }
        }
    }
    print!("{}", output::table(&plan.grid, &results, &metrics));
    println!("wrote {}", written.join(", "));
    Ok(())
}

fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn chosen_metrics(names: &[String]) -> Result<Vec<usize>, String> {
    if names.is_empty() {
        return Ok(vec![metrics::find("iops")?]);
    }
    let mut out = Vec::new();
    for n in names {
        let m = metrics::find(n).map_err(|e| format!("--metric: {e}"))?;
        if !out.contains(&m) {
            out.push(m);
        }
    }
    Ok(out)
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
    std::fs::write(path, bytes).map_err(|e| format!("{}: cannot write: {e}", path.display()))
}

/// Where the CSV and plots go.
struct Outputs {
    csv: PathBuf,
    /// Directory for per-metric plots (--out), or the stem of the one plot (--plot).
    dir: Option<PathBuf>,
    plot: Option<PathBuf>,
}

impl Outputs {
    fn of(args: &SweepArgs) -> Result<Outputs, String> {
        let dir = match (&args.out, &args.csv, &args.plot) {
            (Some(d), _, _) => Some(d.clone()),
            (None, None, None) => {
                let stem = args
                    .job
                    .file_stem()
                    .map_or("job".into(), |s| s.to_string_lossy().into_owned());
                Some(PathBuf::from(format!("sweep-{stem}")))
            }
            _ => None,
        };
        if let Some(d) = &dir {
            std::fs::create_dir_all(d)
                .map_err(|e| format!("{}: cannot create the directory: {e}", d.display()))?;
        }
        let csv = match (&args.csv, &dir) {
            (Some(c), _) => c.clone(),
            (None, Some(d)) => d.join("sweep.csv"),
            (None, None) => args
                .plot
                .as_ref()
                .map_or_else(|| PathBuf::from("sweep.csv"), |p| p.with_extension("csv")),
        };
        Ok(Outputs {
            csv,
            dir,
            plot: args.plot.clone(),
        })
    }

    /// The path (without extension) of the plot of the `k`-th chosen metric: --plot
    /// names the first (others get -METRIC), --out DIR holds one per metric, and with
    /// only --csv the plots sit beside the CSV.
    fn plot_stem(&self, k: usize, metric: &str) -> PathBuf {
        let beside = |p: &Path| {
            let stem = p.with_extension("");
            if k == 0 {
                stem
            } else {
                PathBuf::from(format!("{}-{metric}", stem.display()))
            }
        };
        match (&self.plot, &self.dir) {
            (Some(p), _) => beside(p),
            (None, Some(d)) => d.join(metric),
            (None, None) => beside(&self.csv),
        }
    }
}

/// Everything needed to build the inputs of any point, checked before anything runs.
struct Plan {
    job_path: PathBuf,
    job_text: String,
    jobs: Vec<JobSpec>,
    platform_text: String,
    platform_origin: String,
    platform_name: String,
    policy: PolicyArgs,
    seed: u64,
    budget: irqlab_sim::Budget,
    grid: Grid,
    fio_dir: Option<PathBuf>,
}

impl Plan {
    fn new(args: &SweepArgs) -> Result<Plan, String> {
        let grid = Grid::parse(&args.sets)?;
        let read = |p: &Path| {
            irqlab_fio::input::read_text(p, irqlab_fio::input::MAX_INPUT_BYTES)
                .map_err(|e| format!("{}: {e}", p.display()))
        };
        let job_text = read(&args.job)?;
        let jobs = irqlab_fio::parse_str(&job_text, &args.job).map_err(|e| e.to_string())?;
        let path = crate::cmd_run::resolve_platform(&args.platform)?;
        let platform_text = read(&path)?;
        let platform_origin = path.display().to_string();
        let platform = Platform::from_toml(&platform_text, &platform_origin, &[])
            .map_err(|e| e.to_string())?;
        let plan = Plan {
            job_path: args.job.clone(),
            job_text,
            jobs,
            platform_text,
            platform_origin,
            platform_name: platform.name,
            policy: args.policy.clone(),
            seed: args.seed,
            budget: args.budget.budget(),
            grid,
            fio_dir: args.fio_dir.clone(),
        };
        plan.check_values()?;
        Ok(plan)
    }

    /// Every value of every key on its own, so a typo fails before hours of simulation
    /// and the message names the value.
    fn check_values(&self) -> Result<(), String> {
        for d in &self.grid.dims {
            for v in &d.values {
                let fail = |e: String| format!("--set {}={v}: {e}", d.key);
                match &d.kind {
                    KeyKind::Policy(k) => k.apply(&mut self.policy.clone(), v).map_err(fail)?,
                    KeyKind::Seed => {
                        v.parse::<u64>()
                            .map_err(|_| fail("a seed is a non-negative integer".into()))?;
                    }
                    KeyKind::Platform => {
                        Platform::from_toml(
                            &self.platform_text,
                            &self.platform_origin,
                            &[format!("{}={v}", d.key)],
                        )
                        .map_err(|e| fail(e.to_string()))?;
                    }
                    KeyKind::Job(opt) => {
                        self.jobs_with(&[(opt.as_str(), v.as_str())])
                            .map_err(fail)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// The jobs with `options` appended to every job section (a job's own last value
    /// wins in fio, so this overrides the file and its [global]).
    fn jobs_with(&self, options: &[(&str, &str)]) -> Result<Vec<JobSpec>, String> {
        if options.is_empty() {
            return Ok(self.jobs.clone());
        }
        let text = with_job_options(&self.job_text, options);
        irqlab_fio::parse_str(&text, &self.job_path).map_err(|e| e.to_string())
    }

    /// Simulates point `i`.
    fn run_point(&self, i: usize) -> Result<PointResult, String> {
        let values = self.grid.values(i);
        let mut policy = self.policy.clone();
        let mut seed = self.seed;
        let mut sets = Vec::new();
        let mut job_opts = Vec::new();
        for (d, v) in self.grid.dims.iter().zip(&values) {
            match &d.kind {
                KeyKind::Policy(k) => k.apply(&mut policy, v)?,
                KeyKind::Seed => seed = v.parse().map_err(|_| format!("seed '{v}'"))?,
                KeyKind::Platform => sets.push(format!("{}={v}", d.key)),
                KeyKind::Job(opt) => job_opts.push((opt.as_str(), *v)),
            }
        }
        let mut jobs = self.jobs_with(&job_opts)?;
        // With --fio-dir every point also writes fio logs named as bench-fio names them.
        let fio_point = self.fio_dir.as_ref().map(|base| {
            let prefix = fio_dir::prefix(&jobs);
            (fio_dir::point_dir(base, &self.grid, &values), prefix)
        });
        if let Some((_, prefix)) = &fio_point {
            let logs = fio_dir::log_options(prefix);
            let mut with_logs = job_opts.clone();
            with_logs.extend(logs.iter().map(|(k, v)| (*k, v.as_str())));
            jobs = self.jobs_with(&with_logs)?;
        }
        let platform = Platform::from_toml(&self.platform_text, &self.platform_origin, &sets)
            .map_err(|e| e.to_string())?;
        let report = irqlab_sim::simulate(
            &jobs,
            &platform,
            &policy.policy(),
            &SimOptions::overriding(seed).with_budget(self.budget),
        )
        .map_err(|e| e.to_string())?;
        if let Some((dir, prefix)) = &fio_point {
            fio_dir::write(dir, prefix, &report)?;
        }
        let devices: std::collections::BTreeSet<&str> = jobs
            .iter()
            .flat_map(|j| j.filenames.iter().map(String::as_str))
            .collect();
        Ok(PointResult {
            metrics: metrics::measure(&report, devices.len()),
        })
    }

    /// Runs every point on `threads` workers taking points from a shared counter;
    /// results land at their grid index, so output does not depend on timing. The
    /// first failing point (lowest index among those run) stops the sweep.
    fn run(&self, threads: usize, progress: &Progress) -> Result<Vec<PointResult>, String> {
        let n = self.grid.len();
        let next = AtomicUsize::new(0);
        let failed = AtomicBool::new(false);
        let slots: Mutex<Vec<Option<Result<PointResult, String>>>> =
            Mutex::new((0..n).map(|_| None).collect());
        std::thread::scope(|s| {
            for _ in 0..threads.clamp(1, n.max(1)) {
                s.spawn(|| {
                    loop {
                        if failed.load(Ordering::Relaxed) {
                            break;
                        }
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= n {
                            break;
                        }
                        let r = self.run_point(i);
                        if r.is_err() {
                            failed.store(true, Ordering::Relaxed);
                        }
                        if let Ok(mut slots) = slots.lock() {
                            slots[i] = Some(r);
                        }
                        progress.inc(1);
                    }
                });
            }
        });
        let slots = slots
            .into_inner()
            .map_err(|_| "a sweep worker panicked".to_string())?;
        let mut out = Vec::with_capacity(n);
        for (i, slot) in slots.into_iter().enumerate() {
            match slot {
                Some(Ok(r)) => out.push(r),
                Some(Err(e)) => return Err(format!("at {}: {e}", self.describe(i))),
                None => return Err(format!("at {}: not run", self.describe(i))),
            }
        }
        Ok(out)
    }

    fn describe(&self, i: usize) -> String {
        self.grid
            .dims
            .iter()
            .zip(self.grid.values(i))
            .map(|(d, v)| format!("{}={v}", d.key))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// "JOB on PLATFORM" for plot titles.
    fn context(&self) -> String {
        let job = self.job_path.file_name().map_or_else(
            || self.job_path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        format!("{job} on {}", self.platform_name)
    }
}

/// Appends `key=value` lines at the end of every job section (not [global]).
fn with_job_options(text: &str, options: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    let mut in_job = false;
    let close = |out: &mut String, in_job: bool| {
        if in_job {
            for (k, v) in options {
                out.push_str(k);
                out.push('=');
                out.push_str(v);
                out.push('\n');
            }
        }
    };
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            close(&mut out, in_job);
            in_job = !t.eq_ignore_ascii_case("[global]");
        }
        out.push_str(line);
        out.push('\n');
    }
    close(&mut out, in_job);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        sweep: SweepArgs,
    }

    const JOB: &str = "; two disks, short\n[global]\nioengine=libaio\ndirect=1\nrw=randread\n\
        bs=4k\niodepth=4\ntime_based\nruntime=1ms\n[a]\nfilename=/dev/nvme0n1\ncpus_allowed=0\n\
        [b]\nfilename=/dev/nvme1n1\ncpus_allowed=1\n";

    fn tmpdir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("irqlab-sweep-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn args(dir: &Path, extra: &[&str]) -> SweepArgs {
        let job = dir.join("two.fio");
        std::fs::write(&job, JOB).unwrap();
        let platform = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../platforms/example.toml");
        let mut argv = vec![
            "sweep".to_string(),
            job.display().to_string(),
            "--platform".into(),
            platform.display().to_string(),
        ];
        argv.extend(extra.iter().map(|s| s.to_string()));
        Cli::try_parse_from(argv).unwrap().sweep
    }

    #[test]
    fn job_options_go_to_every_job_section() {
        let text = with_job_options(JOB, &[("iodepth", "16")]);
        let jobs = irqlab_fio::parse_str(&text, "t.fio".as_ref()).unwrap();
        assert!(jobs.iter().all(|j| j.iodepth == 16));
        assert_eq!(text.matches("iodepth=16").count(), 2, "not in [global]");
    }

    #[test]
    fn sweep_is_deterministic_and_writes_csv_and_plots() {
        let mut outputs = Vec::new();
        for run in 0..2 {
            let dir = tmpdir(&format!("det{run}"));
            let out = dir.join("out");
            let a = args(
                &dir,
                &[
                    "--set",
                    "job.iodepth=1..4:*2",
                    "--set",
                    "delivery=remapped,posted",
                    "--metric",
                    "iops",
                    "--metric",
                    "notifications_per_sec",
                    "--threads",
                    if run == 0 { "1" } else { "3" },
                    "--out",
                    out.to_str().unwrap(),
                ],
            );
            main(a).unwrap();
            let csv = std::fs::read_to_string(out.join("sweep.csv")).unwrap();
            for f in ["iops.png", "iops.svg", "notifications_per_sec.png"] {
                let len = std::fs::metadata(out.join(f)).unwrap().len();
                assert!(len > 1000, "{f} is {len} bytes");
            }
            let svg = std::fs::read_to_string(out.join("iops.svg")).unwrap();
            assert!(svg.contains("delivery=posted") && svg.contains("job.iodepth"));
            outputs.push((csv, svg));
        }
        assert_eq!(
            outputs[0], outputs[1],
            "one thread and three give the same bytes"
        );
        let csv = &outputs[0].0;
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 1 + 3 * 2);
        assert!(lines[0].starts_with("job.iodepth,delivery,iops,iops_per_device,"));
        assert!(lines[1].starts_with("1,remapped,") && lines[6].starts_with("4,posted,"));
        // Posted delivery sends no more notifications per I/O than remapped at one depth.
        let col = |name: &str| lines[0].split(',').position(|h| h == name).unwrap();
        let (n, io) = (col("notifications_per_sec"), col("iops"));
        let val = |l: &str, c: usize| l.split(',').nth(c).unwrap().parse::<f64>().unwrap();
        let per_io = |l: &str| val(l, n) / val(l, io);
        assert!(per_io(lines[6]) <= per_io(lines[5]), "{csv}");
    }

    #[test]
    fn bad_grids_fail_before_running() {
        let dir = tmpdir("bad");
        let e = main(args(&dir, &["--set", "max_loop=0..2"])).unwrap_err();
        assert!(e.contains("max_loop=0") && e.contains("max_loop"), "{e}");
        let e = main(args(&dir, &["--set", "cpu.irq_entri_ns=1..2"])).unwrap_err();
        assert!(e.contains("unknown key 'irq_entri_ns'"), "{e}");
        let e = main(args(&dir, &["--set", "job.iodepth=1,x"])).unwrap_err();
        assert!(e.contains("job.iodepth=x"), "{e}");
        let e = main(args(&dir, &["--set", "bogus=1"])).unwrap_err();
        assert!(e.contains("unknown key 'bogus'"), "{e}");
        let e = main(args(&dir, &["--set", "seed=1", "--metric", "nope"])).unwrap_err();
        assert!(e.contains("unknown metric 'nope'"), "{e}");
    }
}
