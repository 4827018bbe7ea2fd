//! `irqlab sweep`: simulate a grid of parameter values in parallel on every core, then
//! write a CSV with one row per point, plots (PNG and SVG) and a table. The grid, the
//! points and the outputs are irqlab-sweep's; this file chooses where the files go.
//!
//! Keys may be policy options (delivery, max_loop, coalesce, moderator, handler, budget,
//! weight, reap_after_submit, flood_detection; parsed by the same rules as `irqlab run`),
//! `seed`, fio options of every job (`job.iodepth`) or platform parameters
//! (`devices.0.count`, through the platform's own overrides).

use crate::CmdResult;
use clap::Args;
use irqlab_inputs::{JobSource, PolicyArgs, ShapeArgs};
use irqlab_observe::Progress;
use irqlab_sweep::{Plan, SweepSpec, metrics, output};
use std::path::{Path, PathBuf};

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
    #[command(flatten)]
    pub shape: ShapeArgs,
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
    pub budget: irqlab_inputs::BudgetArgs,
}

pub fn main(args: SweepArgs) -> CmdResult {
    let metrics = chosen_metrics(&args.metrics)?;
    let plan = Plan::new(&SweepSpec {
        job: JobSource::Path(args.job.clone()),
        platform: args.platform.clone(),
        policy: args.policy.clone(),
        sets: args.sets.clone(),
        seed: args.seed,
        fio_dir: args.fio_dir.clone(),
        budget: args.budget.budget(),
        shape: args.shape.shape(),
    })?;
    let grid = plan.grid();
    let x = output::x_dim(grid, args.x.as_deref())?;
    let progress = Progress::new(plan.len() as u64, "sweep");
    let threads = args
        .threads
        .map_or_else(irqlab_sweep::default_threads, |n| n as usize);
    let results = irqlab_sweep::run_local(&plan, threads, &|| progress.inc(1));
    progress.finish();
    let results = results?;

    let files = Outputs::of(&args)?;
    let csv = output::csv(grid, &results);
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
                let plot = output::plot(grid, &results, x, m, &context);
                for path in output::write_plot(&plot, &stem)? {
                    written.push(path.display().to_string());
                }
            }
        }
    }
    let mut out = output::table(grid, &results, &metrics);
    out.push_str(&format!("wrote {}\n", written.join(", ")));
    crate::stdout::write(&out)?;
    Ok(())
}

fn chosen_metrics(names: &[String]) -> Result<Vec<usize>, String> {
    if names.is_empty() {
        return metrics::find("iops")
            .map(|m| vec![m])
            .map_err(|e| e.to_string());
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
            std::fs::create_dir_all(d).map_err(|e| {
                let why = irqlab_fio::input::io_reason(&e);
                format!("{}: cannot create the directory: {why}", d.display())
            })?;
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
        let e = main(args(&dir, &["--set", "max_loop=0..2"]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("max_loop=0") && e.contains("max_loop"), "{e}");
        let e = main(args(&dir, &["--set", "cpu.irq_entri_ns=1..2"]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown key 'irq_entri_ns'"), "{e}");
        let e = main(args(&dir, &["--set", "job.iodepth=1,x"]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("job.iodepth=x"), "{e}");
        let e = main(args(&dir, &["--set", "bogus=1"]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown key 'bogus'"), "{e}");
        let e = main(args(&dir, &["--set", "seed=1", "--metric", "nope"]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown metric 'nope'"), "{e}");
    }
}
