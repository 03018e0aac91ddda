//! Questions the unit tests build.

use ansel_data::{Candidate, Question};

/// A question whose candidates (ids `<id>_C1`, `<id>_C2`, ...) carry `labels`, in order.
pub fn question(id: &str, labels: &[bool]) -> Question {
    Question {
        id: id.into(),
        text: "q".into(),
        candidates: labels
            .iter()
            .enumerate()
            .map(|(i, &l)| Candidate {
                id: format!("{id}_C{}", i + 1),
                text: "c".into(),
                label: Some(l),
                context: None,
            })
            .collect(),
    }
}
