//! fio's lib/num2str.c: the "1234k", "4821MiB/s" numbers of its normal output.

/// The unit written after the prefix (lib/num2str.h N2S_*; bit units are not used).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    None,
    Byte,
    BytePerSec,
}

const SI: [&str; 7] = ["", "k", "M", "G", "T", "P", "E"];
const IEC: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];

/// num2str(num, maxlen, base=1, pow2, units): divides by 1000 (or 1024 with `pow2`)
/// until at most `maxlen` digits remain, then fills the room left with decimals.
pub fn num2str(mut num: u64, maxlen: usize, pow2: bool, unit: Unit) -> String {
    let thousand: u64 = if pow2 { 1024 } else { 1000 };
    let prefixes = if pow2 { &IEC } else { &SI };
    let unit_str = match unit {
        Unit::None => "",
        Unit::Byte => "B",
        Unit::BytePerSec => "B/s",
    };
    let mut post = 0usize;
    let mut modulo: Option<u64> = None;
    let mut carry = false;
    while post < SI.len() {
        if digits(num) <= maxlen {
            break;
        }
        let m = num % thousand;
        modulo = Some(m);
        num /= thousand;
        carry = m >= thousand / 2;
        post += 1;
    }
    if post >= SI.len() {
        post = 0;
    }
    let Some(modulo) = modulo else {
        return format!("{num}{}{unit_str}", prefixes[post]);
    };
    let room = maxlen as i64 - digits(num) as i64;
    if room <= 1 {
        if carry {
            num += 1;
        }
        return format!("{num}{}{unit_str}", prefixes[post]);
    }
    let frac = format!(
        "{:.*}",
        (room - 1) as usize,
        modulo as f64 / thousand as f64
    );
    if frac.starts_with('1') {
        num += 1;
    }
    format!("{num}.{}{}{unit_str}", &frac[2..], prefixes[post])
}

fn digits(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |d| d as usize + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_fio_outputs() {
        // Values as fio prints them with sig_figs=4 (its default).
        assert_eq!(num2str(1_234_567, 4, false, Unit::None), "1235k");
        assert_eq!(num2str(4_321, 4, false, Unit::None), "4321");
        assert_eq!(num2str(43_210, 4, false, Unit::None), "43.2k");
        assert_eq!(num2str(999, 4, false, Unit::None), "999");
        assert_eq!(
            num2str(5_055_000_000, 4, true, Unit::BytePerSec),
            "4821MiB/s"
        );
        assert_eq!(
            num2str(5_055_000_000, 4, false, Unit::BytePerSec),
            "5055MB/s"
        );
        assert_eq!(num2str(1 << 30, 4, true, Unit::Byte), "1024MiB");
        assert_eq!(num2str(300 << 30, 4, true, Unit::Byte), "300GiB");
        assert_eq!(num2str(123_456, 6, false, Unit::None), "123456");
        assert_eq!(num2str(0, 4, true, Unit::Byte), "0B");
        assert_eq!(num2str(u64::MAX, 4, false, Unit::None), "18.4E");
    }
}
