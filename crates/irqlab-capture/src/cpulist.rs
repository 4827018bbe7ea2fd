//! CPU lists as the kernel prints them (lib/bitmap.c, bitmap_print_to_pagebuf with
//! `%*pbl`): `0-3,8,10-11`; mq's cpu_list separates with ", " instead.

use crate::error::Malformed;

/// The CPUs of a list, ascending and without repeats. An empty list is empty.
pub fn parse(text: &str) -> Result<Vec<u32>, Malformed> {
    let mut cpus = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let bad = || {
            Malformed(format!(
                "'{part}' is not a CPU or range; expected a list like 0-3,8"
            ))
        };
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (
                a.trim().parse().map_err(|_| bad())?,
                b.trim().parse().map_err(|_| bad())?,
            ),
            None => {
                let c: u32 = part.parse().map_err(|_| bad())?;
                (c, c)
            }
        };
        if hi < lo || hi - lo > 1 << 16 {
            return Err(bad());
        }
        cpus.extend(lo..=hi);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// The kernel's compact form of a CPU set: `0-3,8`.
pub fn format(cpus: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        out.push(if j == i {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    out.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_ranges_round_trip() {
        assert_eq!(parse("0-3,8,10-11").unwrap(), vec![0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(parse("0, 1").unwrap(), vec![0, 1]);
        assert_eq!(parse("\n").unwrap(), Vec::<u32>::new());
        assert_eq!(format(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(format(&[]), "");
        assert!(parse("3-1").is_err());
        assert!(parse("a").unwrap_err().0.contains("'a'"));
    }
}
