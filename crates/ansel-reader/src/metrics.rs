//! SQuAD v1.1's answer metrics (the official evaluation script's normalisation).

/// Lower-cases, removes punctuation and the articles a/an/the, and collapses whitespace.
pub fn normalize_answer(text: &str) -> String {
    let lower = text.to_lowercase();
    let no_punct: String = lower
        .chars()
        .filter(|c| !c.is_ascii_punctuation())
        .collect();
    no_punct
        .split_whitespace()
        .filter(|w| !matches!(*w, "a" | "an" | "the"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// 1.0 when the normalised prediction equals one normalised gold answer.
pub fn exact_match(prediction: &str, gold: &[String]) -> f64 {
    let p = normalize_answer(prediction);
    f64::from(u8::from(gold.iter().any(|g| normalize_answer(g) == p)))
}

/// Token F1 between a prediction and one gold answer (bag of normalised tokens).
pub fn token_f1(prediction: &str, gold: &str) -> f64 {
    let p = normalize_answer(prediction);
    let g = normalize_answer(gold);
    let p: Vec<&str> = p.split_whitespace().collect();
    let g: Vec<&str> = g.split_whitespace().collect();
    if p.is_empty() || g.is_empty() {
        return f64::from(u8::from(p == g));
    }
    let mut left = g.clone();
    let mut common = 0usize;
    for w in &p {
        if let Some(i) = left.iter().position(|x| x == w) {
            left.swap_remove(i);
            common += 1;
        }
    }
    if common == 0 {
        return 0.0;
    }
    let precision = common as f64 / p.len() as f64;
    let recall = common as f64 / g.len() as f64;
    2.0 * precision * recall / (precision + recall)
}

/// The best token F1 over the gold answers (0 with none).
pub fn best_f1(prediction: &str, gold: &[String]) -> f64 {
    gold.iter()
        .map(|g| token_f1(prediction, g))
        .fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn squad_normalisation_and_scores() {
        assert_eq!(normalize_answer("The  U.S. Army,"), "us army");
        let gold = vec!["21 million".to_string(), "Amtrak".to_string()];
        assert_eq!(exact_match("21 Million .", &gold), 1.0);
        assert_eq!(exact_match("about 21 million", &gold), 0.0);
        let f = best_f1("about 21 million", &gold);
        assert!((f - 0.8).abs() < 1e-9, "{f}");
        assert_eq!(best_f1("nothing", &gold), 0.0);
        assert_eq!(best_f1("x", &[]), 0.0);
        // Repeated words count as often as both sides have them.
        assert!((token_f1("new new york", "new york") - 0.8).abs() < 1e-9);
    }
}
