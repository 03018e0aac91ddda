/// Shuffles in place with a seeded SplitMix64 Fisher-Yates, so the order is the
/// same on every machine and every build (no dependency on a crate's RNG stream).
pub fn shuffle_seeded<T>(items: &mut [T], seed: u64) {
    let mut state = seed;
    for i in (1..items.len()).rev() {
        let j = (splitmix64(&mut state) % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
}

/// How [`question_batches`] decides that a batch of whole questions is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Packing {
    /// Closed once it holds at least the limit (the last question may take it over): in-batch
    /// negatives need enough pairs in every batch.
    AtLeast,
    /// Never over the limit, except a question larger than it, which is a batch alone: bounds the
    /// memory of one forward pass.
    AtMost,
}

/// Groups whole questions, in a seeded random order, into batches of about `limit` pairs;
/// `sizes[i]` is question i's pair count. Every question is in exactly one batch.
pub fn question_batches(
    sizes: &[usize],
    limit: usize,
    seed: u64,
    packing: Packing,
) -> Vec<Vec<usize>> {
    let limit = limit.max(1);
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    shuffle_seeded(&mut order, seed);
    let mut batches = Vec::new();
    let (mut current, mut pairs) = (Vec::new(), 0);
    for i in order {
        if packing == Packing::AtMost && !current.is_empty() && pairs + sizes[i] > limit {
            batches.push(std::mem::take(&mut current));
            pairs = 0;
        }
        current.push(i);
        pairs += sizes[i];
        if packing == Packing::AtLeast && pairs >= limit {
            batches.push(std::mem::take(&mut current));
            pairs = 0;
        }
    }
    if !current.is_empty() {
        batches.push(current);
    }
    batches
}

/// SplitMix64: a small, well-mixed deterministic generator (the one every seeded draw of ansel
/// uses).
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_permutation_different_seed_different() {
        let mut a: Vec<u32> = (0..50).collect();
        let mut b = a.clone();
        let mut c = a.clone();
        shuffle_seeded(&mut a, 7);
        shuffle_seeded(&mut b, 7);
        shuffle_seeded(&mut c, 8);
        assert_eq!(a, b);
        assert_ne!(a, c);
        let mut sorted = a.clone();
        sorted.sort();
        assert_eq!(sorted, (0..50).collect::<Vec<_>>());
    }

    fn pairs(batch: &[usize], sizes: &[usize]) -> usize {
        batch.iter().map(|&i| sizes[i]).sum()
    }

    fn each_question_once(batches: &[Vec<usize>], n: usize) {
        let mut seen: Vec<usize> = batches.iter().flatten().copied().collect();
        seen.sort();
        assert_eq!(seen, (0..n).collect::<Vec<_>>());
    }

    #[test]
    fn at_least_batches_hold_enough_pairs_except_the_last() {
        let sizes: Vec<usize> = (0..50).map(|i| 1 + i % 7).collect();
        let batches = question_batches(&sizes, 10, 3, Packing::AtLeast);
        each_question_once(&batches, sizes.len());
        for b in &batches[..batches.len() - 1] {
            assert!(pairs(b, &sizes) >= 10, "{b:?}");
        }
        assert_eq!(batches, question_batches(&sizes, 10, 3, Packing::AtLeast));
    }

    #[test]
    fn at_most_batches_stay_under_the_limit_unless_one_question_is_larger() {
        let sizes = [5, 3, 9, 20, 1, 7];
        let batches = question_batches(&sizes, 10, 3, Packing::AtMost);
        each_question_once(&batches, sizes.len());
        for b in &batches {
            assert!(pairs(b, &sizes) <= 10 || b.len() == 1, "{b:?}");
        }
        assert!(
            batches.iter().any(|b| b == &[3]),
            "the 20-pair question is alone"
        );
        assert_eq!(batches, question_batches(&sizes, 10, 3, Packing::AtMost));
        assert_ne!(
            batches,
            question_batches(&sizes, 10, 4, Packing::AtMost),
            "seeded"
        );
    }
}
