//! Calibration targets: which scenario to simulate, which metric to compare, and the
//! value measured on the user's machine. A targets file is small TOML:
//!
//! ```toml
//! [[target]]
//! scenario = "../scenarios/c4/interrupt.toml"   # relative to this file
//! metric = "iops"
//! value = 131200                 # omitted: the scenario's published value
//!
//! [[target]]
//! scenario = "my-randread.toml"
//! fio_json = "fio.json"          # measured iops and clat from a fio JSON result ...
//! interrupts_before = "irq.0"    # ... and interrupts/s from two /proc/interrupts
//! interrupts_after = "irq.1"     #     snapshots taken around the run
//! irq_match = "nvme"             # rows counted (default: every numbered row)
//! ```

use crate::CalibError;
use crate::measured::{measured_metrics, read_fio_json, read_proc_interrupts};
use crate::metrics::Metric;
use crate::scenario::Scenario;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// One value to fit.
#[derive(Clone, Debug)]
pub struct FitTarget {
    /// Index into the list of scenarios to simulate.
    pub scenario: usize,
    pub metric: Metric,
    pub value: f64,
    pub weight: f64,
}

/// Scenarios to run and the values to fit on them.
#[derive(Clone, Debug, Default)]
pub struct TargetSet {
    pub scenarios: Vec<Scenario>,
    pub targets: Vec<FitTarget>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(rename = "target")]
    targets: Vec<Entry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    scenario: String,
    metric: Option<String>,
    value: Option<f64>,
    fio_json: Option<String>,
    interrupts_before: Option<String>,
    interrupts_after: Option<String>,
    #[serde(default)]
    irq_match: String,
    weight: Option<f64>,
}

impl TargetSet {
    /// Index of the scenario at `path`, loading it on first use.
    fn scenario_ix(&mut self, path: &Path) -> Result<usize, CalibError> {
        if let Some(i) = self.scenarios.iter().position(|s| s.path == path) {
            return Ok(i);
        }
        self.scenarios.push(Scenario::load(path)?);
        Ok(self.scenarios.len() - 1)
    }

    /// Adds every published target of `s` (reproduce's figures as fitting targets).
    pub fn add_published(&mut self, s: &Scenario) {
        let ix = match self.scenarios.iter().position(|x| x.path == s.path) {
            Some(i) => i,
            None => {
                self.scenarios.push(s.clone());
                self.scenarios.len() - 1
            }
        };
        for t in &s.targets {
            self.targets.push(FitTarget {
                scenario: ix,
                metric: t.metric,
                value: t.published,
                weight: 1.0,
            });
        }
    }

    /// Reads a targets file and adds its targets.
    pub fn add_file(&mut self, path: &Path) -> Result<(), CalibError> {
        let text = irqlab_fio::input::read_text(path, irqlab_fio::input::MAX_INPUT_BYTES)
            .map_err(|e| CalibError::at(path, e))?;
        let f: File = toml::from_str(&text).map_err(|e| CalibError::toml(&text, path, &e))?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let rel = |p: &str| -> PathBuf { dir.join(p) };
        for (n, e) in f.targets.iter().enumerate() {
            let at = |msg: &dyn std::fmt::Display| {
                CalibError::at(path, format!("target {}: {msg}", n + 1))
            };
            let ix = self.scenario_ix(&rel(&e.scenario)).map_err(|e| at(&e))?;
            let weight = e.weight.unwrap_or(1.0);
            if !(weight.is_finite() && weight > 0.0) {
                return Err(at(&format!("weight must be positive, not {weight}")));
            }
            let wanted: Option<Metric> = e
                .metric
                .as_deref()
                .map(str::parse)
                .transpose()
                .map_err(|e| at(&e))?;
            let mut values: Vec<(Metric, f64)> = Vec::new();
            if let Some(fio) = &e.fio_json {
                let r = read_fio_json(&rel(fio)).map_err(|e| at(&e))?;
                let snaps = match (&e.interrupts_before, &e.interrupts_after) {
                    (Some(a), Some(b)) => Some((
                        read_proc_interrupts(&rel(a), &e.irq_match).map_err(|e| at(&e))?,
                        read_proc_interrupts(&rel(b), &e.irq_match).map_err(|e| at(&e))?,
                    )),
                    (None, None) => None,
                    _ => {
                        return Err(at(
                            &"give both interrupts_before and interrupts_after, or neither",
                        ));
                    }
                };
                values = measured_metrics(&r, snaps.as_ref().map(|(a, b)| (a, b)))
                    .map_err(|e| at(&e))?;
            } else if e.interrupts_before.is_some() || e.interrupts_after.is_some() {
                return Err(at(
                    &"/proc/interrupts snapshots need fio_json for the run's length",
                ));
            }
            match (wanted, e.value) {
                (Some(m), Some(v)) => values = vec![(m, v)],
                (Some(m), None) if !values.is_empty() => {
                    values.retain(|(x, _)| *x == m);
                    if values.is_empty() {
                        return Err(at(&format!("the measurements give no value for {m}")));
                    }
                }
                (Some(m), None) => {
                    let s = &self.scenarios[ix];
                    let t = s.targets.iter().find(|t| t.metric == m).ok_or_else(|| {
                        at(&format!(
                            "no value: give value = ..., or a scenario with a published {m}"
                        ))
                    })?;
                    values = vec![(m, t.published)];
                }
                (None, Some(_)) => return Err(at(&"value without metric")),
                (None, None) if values.is_empty() => {
                    let s = &self.scenarios[ix];
                    values = s.targets.iter().map(|t| (t.metric, t.published)).collect();
                }
                (None, None) => {}
            }
            for (metric, value) in values {
                if !(value.is_finite() && value > 0.0) {
                    return Err(at(&format!("{metric} = {value}: values must be positive")));
                }
                self.targets.push(FitTarget {
                    scenario: ix,
                    metric,
                    value,
                    weight,
                });
            }
        }
        if self.targets.is_empty() {
            return Err(CalibError::at(path, "no [[target]] entries"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A targets file measured on a real machine: the scenario has no published figure
    /// of its own, the values come from fio's JSON and two /proc/interrupts snapshots
    /// (in Linux 6.18's layout).
    #[test]
    fn measurements_need_no_published_target_in_the_scenario() {
        let dir = std::env::temp_dir().join(format!("irqlab-targets-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let scenario = format!(
            "experiment = \"mine\"\nrow = \"my box\"\njob = \"{}\"\nplatform = \"{}\"\n",
            root.join("examples/qd1-pvsync2.fio").display(),
            root.join("platforms/example.toml").display()
        );
        std::fs::write(dir.join("mine.toml"), scenario).unwrap();
        std::fs::write(
            dir.join("fio.json"),
            r#"{"jobs":[{"job_runtime":2000,"read":{"iops":100000.0,"total_ios":200000,"runtime":2000,"clat_ns":{"mean":9000.0}}}]}"#,
        )
        .unwrap();
        let snap = |n: u64| {
            format!(
                "{:11}CPU0       CPU1       \n128:{n:>11}{:>11} IR-PCI-MSIX-0000:01:00.0   1-edge      nvme0q1\nPMN: {:>10} {:>10}   Posted MSI notification event\n",
                "", 0, 0, 0
            )
        };
        std::fs::write(dir.join("irq.0"), snap(1_000)).unwrap();
        std::fs::write(dir.join("irq.1"), snap(201_000)).unwrap();
        std::fs::write(
            dir.join("targets.toml"),
            "[[target]]\nscenario = \"mine.toml\"\nfio_json = \"fio.json\"\n\
             interrupts_before = \"irq.0\"\ninterrupts_after = \"irq.1\"\nirq_match = \"nvme\"\n",
        )
        .unwrap();
        let mut set = TargetSet::default();
        set.add_file(&dir.join("targets.toml")).unwrap();
        let got: Vec<(String, f64)> = set
            .targets
            .iter()
            .map(|t| (t.metric.to_string(), t.value))
            .collect();
        assert_eq!(
            got,
            [
                ("iops".to_string(), 100_000.0),
                ("clat_mean_us".to_string(), 9.0),
                ("interrupts_per_sec".to_string(), 100_000.0),
                ("notifications_per_sec".to_string(), 100_000.0),
            ]
        );
        assert!(set.scenarios[0].targets.is_empty());
    }
}
