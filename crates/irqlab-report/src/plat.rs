//! fio's latency histogram (stat.h FIO_IO_U_PLAT_*, stat.c plat_val_to_idx and
//! plat_idx_to_val): values below 128 ns are exact, above that each power of two is
//! split into 64 buckets, so a bucket is at most 1/64 of its value wide. json+ `bins`
//! are keyed by bucket middles and percentiles are bucket middles, as fio prints them.

/// stat.h FIO_IO_U_PLAT_BITS.
pub const PLAT_BITS: u32 = 6;
/// stat.h FIO_IO_U_PLAT_VAL.
pub const PLAT_VAL: u64 = 1 << PLAT_BITS;
/// stat.h FIO_IO_U_PLAT_GROUP_NR.
pub const PLAT_GROUP_NR: u64 = 29;
/// stat.h FIO_IO_U_PLAT_NR: 1856 buckets; the last holds everything from about 17 s.
pub const PLAT_NR: usize = (PLAT_GROUP_NR * PLAT_VAL) as usize;

/// stat.c plat_val_to_idx.
#[inline]
pub fn val_to_idx(val: u64) -> usize {
    let msb = if val == 0 {
        0
    } else {
        63 - val.leading_zeros()
    };
    if msb <= PLAT_BITS {
        return val as usize;
    }
    let error_bits = msb - PLAT_BITS;
    let base = (u64::from(error_bits) + 1) << PLAT_BITS;
    let offset = (PLAT_VAL - 1) & (val >> error_bits);
    ((base + offset) as usize).min(PLAT_NR - 1)
}

/// stat.c plat_idx_to_val: the middle of bucket `idx`.
pub fn idx_to_val(idx: usize) -> u64 {
    let idx = idx as u64;
    if idx < (PLAT_VAL << 1) {
        return idx;
    }
    let error_bits = (idx >> PLAT_BITS) - 1;
    let base = 1u64 << (error_bits + u64::from(PLAT_BITS));
    let k = idx % PLAT_VAL;
    // base + (k + 0.5) * 2^error_bits, exact since error_bits >= 1.
    base + (k << error_bits) + (1 << (error_bits - 1))
}

/// stat.c calc_clat_percentiles: for each percentile of `list` (ascending), the middle of
/// the first bucket where the running count reaches `p / 100 * total`.
pub fn percentiles(plat: &[u64], total: u64, list: &[f64]) -> Vec<u64> {
    let mut out = Vec::with_capacity(list.len());
    if total == 0 || list.is_empty() {
        return out;
    }
    let mut sum = 0u64;
    let mut j = 0;
    for (i, &count) in plat.iter().enumerate() {
        sum += count;
        while j < list.len() && sum as f64 >= list[j] / 100.0 * total as f64 {
            out.push(idx_to_val(i));
            j += 1;
        }
        if j == list.len() {
            break;
        }
    }
    // Rounding can leave the last ones unreached; fio logs an error and keeps going.
    while out.len() < list.len() {
        out.push(out.last().copied().unwrap_or(0));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_match_stat_c() {
        assert_eq!(val_to_idx(0), 0);
        assert_eq!(val_to_idx(127), 127);
        assert_eq!(idx_to_val(127), 127);
        // 34500 ns: msb 15, 9 error bits, base 32768, bucket 3 of its group.
        assert_eq!(idx_to_val(val_to_idx(34_500)), 34_560);
        assert_eq!(idx_to_val(val_to_idx(128)), 129);
        for v in [200u64, 1_000, 12_345, 999_999, 10_000_000_000] {
            let mid = idx_to_val(val_to_idx(v));
            assert!(mid.abs_diff(v) * 64 <= v, "{v} -> {mid}");
        }
        assert_eq!(val_to_idx(u64::MAX), PLAT_NR - 1);
    }

    #[test]
    fn percentiles_are_bucket_middles() {
        let mut plat = vec![0u64; PLAT_NR];
        for v in 1..=100u64 {
            plat[val_to_idx(v * 1000)] += 1;
        }
        let p = percentiles(&plat, 100, &[1.0, 50.0, 99.0, 100.0]);
        let mid = |v: u64| idx_to_val(val_to_idx(v));
        assert_eq!(
            p,
            vec![
                mid(1000),
                idx_to_val(val_to_idx(50_000)),
                idx_to_val(val_to_idx(99_000)),
                idx_to_val(val_to_idx(100_000))
            ]
        );
        assert!(percentiles(&plat, 0, &[50.0]).is_empty());
    }
}
