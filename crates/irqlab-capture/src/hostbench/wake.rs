//! Wake-up costs between two threads blocked on eventfds (fs/eventfd.c: a write wakes
//! the reader through wake_up_locked_poll, i.e. try_to_wake_up): a ping-pong like
//! `perf bench sched pipe` on one CPU and across two, and a one-way wake of a reader
//! whose CPU has been idle for a while, timed from the waker's side.

use super::pin::pin;
use crate::error::CaptureError;
use rustix::event::{EventfdFlags, eventfd};
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

fn efd() -> Result<OwnedFd, CaptureError> {
    eventfd(0, EventfdFlags::CLOEXEC).map_err(|e| CaptureError::Bench(format!("eventfd: {e}")))
}

fn post(fd: &OwnedFd) {
    let _ = rustix::io::write(fd, &1u64.to_ne_bytes());
}

/// Blocks until the counter is non-zero, and takes it.
fn take(fd: &OwnedFd) {
    let mut b = [0u8; 8];
    let _ = rustix::io::read(fd, &mut b);
}

fn spawn(
    cpu: usize,
    body: impl FnOnce() + Send + 'static,
) -> Result<std::thread::JoinHandle<Result<(), CaptureError>>, CaptureError> {
    std::thread::Builder::new()
        .name("hostbench".into())
        .spawn(move || {
            pin(cpu)?;
            body();
            Ok(())
        })
        .map_err(|e| CaptureError::Bench(format!("cannot start a thread: {e}")))
}

fn join(h: std::thread::JoinHandle<Result<(), CaptureError>>) -> Result<(), CaptureError> {
    h.join()
        .map_err(|_| CaptureError::Bench("a benchmark thread panicked".into()))?
}

/// Round trip / 2 between a thread on `a` and one on `b` (the same CPU or not), once per
/// trial of `rounds` round trips, ns.
pub fn ping_pong(a: usize, b: usize, trials: usize, rounds: u32) -> Result<Vec<f64>, CaptureError> {
    let (ping, pong) = (Arc::new(efd()?), Arc::new(efd()?));
    let done = Arc::new(AtomicBool::new(false));
    let (p, q, d) = (ping.clone(), pong.clone(), done.clone());
    let echo = spawn(b, move || {
        loop {
            take(&p);
            if d.load(Ordering::Acquire) {
                break;
            }
            post(&q);
        }
    })?;
    pin(a)?;
    let mut out = Vec::with_capacity(trials);
    // A warm-up trial, not kept.
    for t in 0..=trials {
        let start = Instant::now();
        for _ in 0..rounds {
            post(&ping);
            take(&pong);
        }
        if t > 0 {
            out.push(start.elapsed().as_nanos() as f64 / f64::from(rounds.max(1)) / 2.0);
        }
    }
    done.store(true, Ordering::Release);
    post(&ping);
    join(echo)?;
    Ok(out)
}

/// One-way wake-ups of a reader on `b` that has been blocked (its CPU idle) for `gap`:
/// per sample, from the waker's write on `a` to the reader running, and the time the
/// write itself took (what the waker pays, the IPI to an idle CPU included), ns.
pub fn idle_wake(
    a: usize,
    b: usize,
    samples: usize,
    gap: Duration,
) -> Result<(Vec<f64>, Vec<f64>), CaptureError> {
    let (go, ack) = (Arc::new(efd()?), Arc::new(efd()?));
    let woke = Arc::new(AtomicU64::new(0));
    let base = Instant::now();
    let warm = 5;
    let (g, k, w) = (go.clone(), ack.clone(), woke.clone());
    let reader = spawn(b, move || {
        for _ in 0..samples + warm {
            take(&g);
            w.store(base.elapsed().as_nanos() as u64, Ordering::Release);
            post(&k);
        }
    })?;
    pin(a)?;
    let (mut latency, mut waker) = (Vec::with_capacity(samples), Vec::with_capacity(samples));
    for i in 0..samples + warm {
        // Spin, so this CPU stays busy while the reader's goes idle.
        let idle_from = Instant::now();
        while idle_from.elapsed() < gap {
            std::hint::spin_loop();
        }
        let t0 = base.elapsed().as_nanos() as u64;
        post(&go);
        let t1 = base.elapsed().as_nanos() as u64;
        take(&ack);
        let t2 = woke.load(Ordering::Acquire);
        if i >= warm {
            latency.push(t2.saturating_sub(t0) as f64);
            waker.push((t1 - t0) as f64);
        }
    }
    join(reader)?;
    Ok((latency, waker))
}
