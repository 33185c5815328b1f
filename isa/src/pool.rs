//! A small work pool for the workspace's sweeps: an ordered map of a function over a slice, run
//! on scoped threads that each take the next unclaimed item when they finish one (items of very
//! different cost balance themselves). It owns no state between calls.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// The number of threads a sweep uses: the machine's available parallelism (1 when it cannot be
/// read), at most `at_most` and at least 1.
pub fn threads(at_most: usize) -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(at_most)
        .max(1)
}

/// `f(i, &items[i])` for every item, in the items' order, computed on up to `threads` scoped
/// threads (at least one, no more than there are items). A panic in `f` propagates to the caller
/// once every thread has stopped.
pub fn map_ordered<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    f: impl Fn(usize, &T) -> R + Sync,
) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<Option<R>>> = Mutex::new(items.iter().map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..threads.clamp(1, items.len().max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                let r = f(i, item);
                done.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(r);
            });
        }
    });
    done.into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .into_iter()
        .map(|r| r.expect("every item is taken by exactly one thread, which stores its result"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_keep_the_items_order_whatever_the_thread_count() {
        let items: Vec<u64> = (0..100).collect();
        for threads in [0, 1, 3, 200] {
            let out = map_ordered(&items, threads, |i, &x| (i, x * x));
            let want: Vec<(usize, u64)> = (0..100).map(|i| (i as usize, i * i)).collect();
            assert_eq!(out, want, "{threads} threads");
        }
        assert!(map_ordered(&[] as &[u8], 4, |_, &x| x).is_empty());
    }

    #[test]
    fn every_item_runs_once() {
        let runs = AtomicUsize::new(0);
        let out = map_ordered(&[1u32; 37], 4, |_, &x| {
            runs.fetch_add(1, Ordering::Relaxed);
            x
        });
        assert_eq!(runs.into_inner(), 37);
        assert_eq!(out.iter().sum::<u32>(), 37);
    }

    #[test]
    fn thread_counts_are_at_least_one() {
        assert_eq!(threads(0), 1);
        assert!(threads(4) >= 1 && threads(4) <= 4);
    }
}
