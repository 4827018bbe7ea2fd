//! fio's per-job random seeds (init.c setup_random_seeds): every random stream of a job
//! (block sizes, read/write mix, Poisson rate gaps, start delay) gets its own seed,
//! derived from `randseed` and the job's number, so clones draw different values and a
//! rerun draws the same ones.

/// init.c FIO_RANDSEED's successor: options.c `randseed` defaults to 0x89.
pub const DEFAULT_RANDSEED: u64 = 0x89;

/// fio.h FIO_RAND_*_OFF: the index of each stream's seed.
pub const RAND_BS_READ: usize = 0;
pub const RAND_BS_WRITE: usize = 1;
pub const RAND_MIX: usize = 4;
pub const RAND_START_DELAY: usize = 13;
pub const RAND_POISSON_READ: usize = 15;
pub const RAND_POISSON_WRITE: usize = 17;
/// fio.h FIO_RAND_NR_OFFS.
pub const RAND_NR_OFFS: usize = 24;

/// init.c setup_random_seeds for a job with `rand_seed` and fio's 1-based
/// `thread_number` (clones count): `seed * thread_number + i` with the seed stirred by
/// 0x9e370001 before each stream.
pub fn rand_seeds(rand_seed: u64, thread_number: u64) -> [u64; RAND_NR_OFFS] {
    const STIR: u64 = 0x9e37_0001;
    let mut seed = rand_seed;
    for _ in 0..4 {
        seed = seed.wrapping_mul(STIR);
    }
    let mut out = [0; RAND_NR_OFFS];
    for (i, s) in out.iter_mut().enumerate() {
        *s = seed.wrapping_mul(thread_number).wrapping_add(i as u64);
        seed = seed.wrapping_mul(STIR);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_follow_init_c() {
        let s = rand_seeds(DEFAULT_RANDSEED, 1);
        // 0x89 * 0x9e370001^4, then + i, stirred again per stream.
        let mut seed = 0x89u64;
        for _ in 0..4 {
            seed = seed.wrapping_mul(0x9e37_0001);
        }
        assert_eq!(s[0], seed);
        assert_eq!(s[1], seed.wrapping_mul(0x9e37_0001) + 1);
        assert_ne!(rand_seeds(DEFAULT_RANDSEED, 2), s, "clones differ");
        assert_ne!(rand_seeds(7, 1), s, "randseed changes every stream");
    }
}
