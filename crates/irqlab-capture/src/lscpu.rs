//! lscpu's text output (`LC_ALL=C lscpu > lscpu.txt`), for capture directories laid out
//! by hand on machines where irqlab is not installed.

use crate::error::Malformed;
use crate::topology::Topology;

/// A topology from lscpu's `Key: value` lines. CPU(s) is required; what is absent stays
/// unknown.
pub fn parse(text: &str) -> Result<Topology, Malformed> {
    let fields: Vec<(&str, &str)> = text
        .lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim(), v.trim()))
        .collect();
    let get = |k: &str| fields.iter().find(|(key, _)| *key == k).map(|(_, v)| *v);
    let num = |k: &str| get(k).and_then(|v| v.parse::<u32>().ok());
    let float = |k: &str| get(k).and_then(|v| v.parse::<f64>().ok());
    let cpus = num("CPU(s)").ok_or_else(|| {
        Malformed(
            "no 'CPU(s):' line; expected the output of lscpu (LC_ALL=C lscpu > lscpu.txt)".into(),
        )
    })?;
    if cpus == 0 {
        return Err(Malformed("'CPU(s): 0'; expected at least one CPU".into()));
    }
    let online = match get("On-line CPU(s) list") {
        Some(l) => crate::cpulist::parse(l)?,
        None => (0..cpus).collect(),
    };
    let threads = num("Thread(s) per core").unwrap_or(1).max(1);
    let sockets = num("Socket(s)").unwrap_or(1).max(1);
    let per_socket = num("Core(s) per socket").or_else(|| num("Core(s) per cluster"));
    let hypervisor = get("Hypervisor vendor").map(str::to_string);
    let flag = get("Flags").is_some_and(|f| f.split_whitespace().any(|w| w == "hypervisor"));
    let mut evidence = Vec::new();
    if flag {
        evidence.push("lscpu Flags: hypervisor".to_string());
    }
    if let Some(h) = &hypervisor {
        evidence.push(format!("lscpu Hypervisor vendor: {h}"));
    }
    Ok(Topology {
        threads_per_core: threads,
        cores: per_socket.map_or((online.len() as u32 / threads).max(1), |c| c * sockets),
        sockets,
        numa_nodes: num("NUMA node(s)").unwrap_or(1).max(1),
        vendor: get("Vendor ID").map(str::to_string),
        model_name: get("Model name").map(str::to_string),
        family: num("CPU family"),
        model: num("Model"),
        stepping: num("Stepping"),
        mhz: float("CPU MHz"),
        max_mhz: float("CPU max MHz"),
        virtualized: flag || hypervisor.is_some(),
        hypervisor,
        hypervisor_evidence: evidence,
        cpu_map: Vec::new(),
        online,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lscpu_text_gives_the_topology() {
        let t = "Architecture:  x86_64\nCPU(s):   16\nOn-line CPU(s) list: 0-15\nVendor ID: GenuineIntel\nModel name: Intel(R) Xeon(R) Platinum 8480+\nCPU family: 6\nModel: 143\nThread(s) per core: 2\nCore(s) per socket: 8\nSocket(s): 1\nStepping: 8\nCPU max MHz: 3800.0000\nHypervisor vendor: KVM\nNUMA node(s): 1\n";
        let topo = parse(t).unwrap();
        assert_eq!(
            (topo.cpus(), topo.cores, topo.sockets, topo.threads_per_core),
            (16, 8, 1, 2)
        );
        assert_eq!(topo.model, Some(143));
        assert_eq!(topo.max_mhz, Some(3800.0));
        assert!(topo.virtualized);
        assert_eq!(topo.hypervisor.as_deref(), Some("KVM"));
    }

    #[test]
    fn text_that_is_not_lscpu_says_what_was_expected() {
        let e = parse("hw.ncpu: 8\n").unwrap_err();
        assert!(e.0.contains("expected the output of lscpu"), "{e}");
        assert!(parse("CPU(s): 0\n").is_err());
        assert!(parse("CPU(s): 4\nOn-line CPU(s) list: x\n").is_err());
    }
}
