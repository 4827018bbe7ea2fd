//! The kernel's moderation tables: lib/dim/net_dim.c (RX/TX × EQE/CQE) and
//! drivers/infiniband/core/cq.c `rdma_dim_prof`, as {usec, count}.

use super::Profile;

/// lib/dim/net_dim.c: five profiles per table.
pub const NET_DIM_PARAMS_NUM_PROFILES: usize = 5;
/// lib/dim/net_dim.c: both period modes start at profile 1.
pub const NET_DIM_DEF_PROFILE_CQE: usize = 1;
pub const NET_DIM_DEF_PROFILE_EQE: usize = 1;

const fn p(usec: u16, count: u16) -> Profile {
    Profile::new(usec, count)
}

/// NET_DIM_RX_EQE_PROFILES (pkts = NET_DIM_DEFAULT_RX_CQ_PKTS_FROM_EQE 256).
pub const NET_DIM_RX_EQE_PROFILES: [Profile; NET_DIM_PARAMS_NUM_PROFILES] =
    [p(1, 256), p(8, 256), p(64, 256), p(128, 256), p(256, 256)];
/// NET_DIM_RX_CQE_PROFILES.
pub const NET_DIM_RX_CQE_PROFILES: [Profile; NET_DIM_PARAMS_NUM_PROFILES] =
    [p(2, 256), p(8, 128), p(16, 64), p(32, 64), p(64, 64)];
/// NET_DIM_TX_EQE_PROFILES (pkts = NET_DIM_DEFAULT_TX_CQ_PKTS_FROM_EQE 128).
pub const NET_DIM_TX_EQE_PROFILES: [Profile; NET_DIM_PARAMS_NUM_PROFILES] =
    [p(1, 128), p(8, 128), p(32, 128), p(64, 128), p(128, 128)];
/// NET_DIM_TX_CQE_PROFILES.
pub const NET_DIM_TX_CQE_PROFILES: [Profile; NET_DIM_PARAMS_NUM_PROFILES] =
    [p(5, 128), p(8, 64), p(16, 32), p(32, 32), p(64, 32)];

/// drivers/infiniband/core/cq.c: nine levels, starting at 0.
pub const RDMA_DIM_PARAMS_NUM_PROFILES: usize = 9;
pub const RDMA_DIM_START_PROFILE: usize = 0;
/// `rdma_dim_prof` as {usec, comps}.
pub const RDMA_DIM_PROFILES: [Profile; RDMA_DIM_PARAMS_NUM_PROFILES] = [
    p(1, 1),
    p(1, 4),
    p(2, 4),
    p(2, 8),
    p(4, 8),
    p(16, 8),
    p(16, 16),
    p(32, 16),
    p(32, 32),
];

/// Which queue the net table is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetDirection {
    Rx,
    Tx,
}

/// DIM_CQ_PERIOD_MODE_START_FROM_EQE (timer starts at the event) or ..._CQE (restarts on
/// each completion).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CqPeriodMode {
    StartFromEqe,
    StartFromCqe,
}

/// net_dim_get_{rx,tx}_moderation's table for one direction and period mode.
pub fn net_dim_profiles(
    dir: NetDirection,
    mode: CqPeriodMode,
) -> [Profile; NET_DIM_PARAMS_NUM_PROFILES] {
    match (dir, mode) {
        (NetDirection::Rx, CqPeriodMode::StartFromEqe) => NET_DIM_RX_EQE_PROFILES,
        (NetDirection::Rx, CqPeriodMode::StartFromCqe) => NET_DIM_RX_CQE_PROFILES,
        (NetDirection::Tx, CqPeriodMode::StartFromEqe) => NET_DIM_TX_EQE_PROFILES,
        (NetDirection::Tx, CqPeriodMode::StartFromCqe) => NET_DIM_TX_CQE_PROFILES,
    }
}
