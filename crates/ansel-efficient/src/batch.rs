//! From encoded questions to padded tensors: a [`Batch`] lays several questions out as their
//! [`Grid`] (what the list-wise loss and the RNN over candidates need) and their pairs as flat
//! `[pairs, tokens]` tensors.

use crate::encode::Grid;
pub use crate::encode::{Distill, EncodedQuestion, Limits};
use crate::vocab::PAD;
use crate::Loss;
use ansel_torch::tch::{Kind, Tensor};

/// Several questions, padded.
pub struct Batch {
    /// `[questions, question tokens]` ids (padding = [`PAD`]) and mask, once per question.
    pub question_ids: Tensor,
    pub question_mask: Tensor,
    /// `[pairs]`: the question (row of `question_ids`) of each pair.
    pub pair_question: Tensor,
    /// `[pairs, question tokens]` mask and exact-match flags of the question side of each pair.
    pub q_mask: Tensor,
    pub q_exact: Tensor,
    pub c_ids: Tensor,
    pub c_mask: Tensor,
    pub c_exact: Tensor,
    /// `[pairs, 1]` pair-level lexical feature (RelCNN's x_feat).
    pub features: Tensor,
    /// `[pairs]`: where each pair sits in the flattened `[questions, width]` grid.
    pub slots: Tensor,
    /// `[questions, width]` gold labels and 1 for real candidates, 0 for padding.
    pub labels: Tensor,
    pub list_mask: Tensor,
    /// `[questions, width]` teacher scores (0 where a question has none, and for padding);
    /// `[questions, 1]`: 1 for questions with teacher scores, 1 for teacher-only questions.
    pub teacher: Tensor,
    pub has_teacher: Tensor,
    pub teacher_only: Tensor,
    /// Real candidates per question, in grid order.
    pub lengths: Vec<i64>,
    pub questions: usize,
    pub width: usize,
    /// For each question, the grid slot of each candidate in its original order.
    pub candidate_slots: Vec<Vec<usize>>,
}

impl Batch {
    /// Point-wise binary cross-entropy of `logits` (`[questions, width]`) over the batch's
    /// real candidates (padding slots left out).
    pub fn pointwise_bce(&self, logits: &Tensor) -> Tensor {
        ansel_torch::pointwise_bce(
            &logits.reshape([-1]).index_select(0, &self.slots),
            &self.labels.reshape([-1]).index_select(0, &self.slots),
        )
    }

    /// The training loss of `logits` (`[questions, width]`): point-wise binary cross-entropy
    /// or list-wise KL divergence to the gold labels, or with `distill` to the targets mixed
    /// with the teacher's ([`Batch::targets`]). `distill` with weight 0 gives the gold loss
    /// bit for bit.
    pub fn loss(&self, logits: &Tensor, loss: Loss, distill: Option<Distill>) -> Tensor {
        match (loss, distill) {
            (Loss::Pointwise, None) => self.pointwise_bce(logits),
            (Loss::Listwise, None) => {
                ansel_torch::listwise_kl(logits, &self.labels, &self.list_mask)
            }
            (Loss::Pointwise, Some(_)) => ansel_torch::pointwise_bce(
                &logits.reshape([-1]).index_select(0, &self.slots),
                &self
                    .targets(loss, distill)
                    .reshape([-1])
                    .index_select(0, &self.slots),
            ),
            (Loss::Listwise, Some(_)) => {
                ansel_torch::listwise_kl_to(logits, &self.targets(loss, distill), &self.list_mask)
            }
        }
    }

    /// `[questions, width]` training targets. Without `distill`: the gold labels (point-wise)
    /// or their normalised distribution (list-wise). With weight W and temperature T: a
    /// question with teacher scores gets `(1 - W) * gold + W * teacher`, where the teacher's
    /// part is `softmax(scores / T)` over its candidates (list-wise) or `sigmoid(scores / T)`
    /// per pair (point-wise); a teacher-only question gets the teacher's part alone.
    pub fn targets(&self, loss: Loss, distill: Option<Distill>) -> Tensor {
        let gold = match loss {
            Loss::Pointwise => self.labels.shallow_clone(),
            Loss::Listwise => ansel_torch::gold_distribution(&self.labels, &self.list_mask),
        };
        let Some(d) = distill else { return gold };
        let soft = match loss {
            Loss::Pointwise => (&self.teacher / d.temperature).sigmoid() * &self.list_mask,
            Loss::Listwise => {
                ansel_torch::soft_distribution(&self.teacher, &self.list_mask, d.temperature)
            }
        };
        let with_gold = self.teacher_only.ones_like() - &self.teacher_only;
        let gold_weight =
            &with_gold * (self.has_teacher.ones_like() - &self.has_teacher * d.weight);
        let soft_weight = &self.has_teacher * (&self.teacher_only + &with_gold * d.weight);
        gold * gold_weight + soft * soft_weight
    }

    /// `questions` must each have a candidate.
    pub fn new(questions: &[&EncodedQuestion]) -> Batch {
        let grid = Grid::new(questions);
        let width = grid.width;
        let pairs = &grid.pairs;
        let pair_question: Vec<i64> = pairs.iter().map(|&(_, s)| (s / width) as i64).collect();
        let (question_ids, question_mask, _) = pad(questions
            .iter()
            .map(|q| (&q.pairs[0].q_ids, &q.pairs[0].q_exact)));
        let (_, q_mask, q_exact) = pad(pairs.iter().map(|(p, _)| (&p.q_ids, &p.q_exact)));
        let (c_ids, c_mask, c_exact) = pad(pairs.iter().map(|(p, _)| (&p.c_ids, &p.c_exact)));
        let features: Vec<f32> = pairs.iter().map(|(p, _)| p.overlap).collect();
        let slots: Vec<i64> = pairs.iter().map(|&(_, s)| s as i64).collect();
        let mut labels = vec![0f32; questions.len() * width];
        let mut list_mask = vec![0f32; questions.len() * width];
        let mut teacher = vec![0f32; questions.len() * width];
        for (q, slot_of) in questions.iter().zip(&grid.candidate_slots) {
            for (i, &slot) in slot_of.iter().enumerate() {
                labels[slot] = f32::from(q.labels[i] as u8);
                list_mask[slot] = 1.0;
                if let Some(scores) = &q.teacher {
                    teacher[slot] = scores[i];
                }
            }
        }
        let flag = |f: fn(&EncodedQuestion) -> bool| -> Tensor {
            let v: Vec<f32> = questions.iter().map(|q| f32::from(f(q) as u8)).collect();
            Tensor::from_slice(&v).view([-1, 1])
        };
        let shape = [questions.len() as i64, width as i64];
        Batch {
            question_ids,
            question_mask,
            pair_question: Tensor::from_slice(&pair_question),
            q_mask,
            q_exact,
            c_ids,
            c_mask,
            c_exact,
            features: Tensor::from_slice(&features).view([-1, 1]),
            slots: Tensor::from_slice(&slots),
            labels: Tensor::from_slice(&labels).view(shape),
            list_mask: Tensor::from_slice(&list_mask).view(shape),
            teacher: Tensor::from_slice(&teacher).view(shape),
            has_teacher: flag(|q| q.teacher.is_some()),
            teacher_only: flag(|q| q.teacher_only),
            lengths: grid.lengths.iter().map(|&n| n as i64).collect(),
            questions: questions.len(),
            width,
            candidate_slots: grid.candidate_slots,
        }
    }

    pub fn pairs(&self) -> usize {
        self.slots.size()[0] as usize
    }

    /// Per-question scores in original candidate order from `[questions, width]` logits.
    pub fn scores(&self, logits: &Tensor) -> Vec<Vec<f32>> {
        let flat: Vec<f32> =
            Vec::try_from(logits.to_kind(Kind::Float).reshape([-1])).expect("float logits");
        self.candidate_slots
            .iter()
            .map(|slots| slots.iter().map(|&s| flat[s]).collect())
            .collect()
    }
}

/// Pads token rows to the longest: ids, mask and exact-match flags, each `[rows, longest]`.
fn pad<'a>(rows: impl Iterator<Item = (&'a Vec<i64>, &'a Vec<f32>)>) -> (Tensor, Tensor, Tensor) {
    let rows: Vec<_> = rows.collect();
    let longest = rows.iter().map(|(ids, _)| ids.len()).max().unwrap_or(1);
    let mut ids = vec![PAD; rows.len() * longest];
    let mut mask = vec![0f32; rows.len() * longest];
    let mut exact = vec![0f32; rows.len() * longest];
    for (r, (row_ids, row_exact)) in rows.iter().enumerate() {
        let at = r * longest;
        ids[at..at + row_ids.len()].copy_from_slice(row_ids);
        mask[at..at + row_ids.len()].fill(1.0);
        exact[at..at + row_exact.len()].copy_from_slice(row_exact);
    }
    let shape = [rows.len() as i64, longest as i64];
    (
        Tensor::from_slice(&ids).view(shape),
        Tensor::from_slice(&mask).view(shape),
        Tensor::from_slice(&exact).view(shape),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::Vocabulary;
    use ansel_data::{Candidate, Question};
    use ansel_torch::tch::Kind;

    fn question(id: &str, texts: &[&str], answer: Option<usize>) -> Question {
        Question {
            id: id.into(),
            text: "who wrote hamlet".into(),
            candidates: texts
                .iter()
                .enumerate()
                .map(|(i, t)| Candidate {
                    id: i.to_string(),
                    text: t.to_string(),
                    label: Some(answer == Some(i)),
                    context: None,
                })
                .collect(),
        }
    }

    const TEACHER: [&[f32]; 3] = [&[2.0, -1.0, 0.5], &[0.3, 1.7], &[-2.0, 3.0]];

    /// Two answered questions of 3 and 2 candidates (one batch, so one padded slot) and a
    /// third whose gold label says candidate 0; with `teacher`, each gets the scores above,
    /// and the third is teacher-only.
    fn batch(teacher: bool, third: bool) -> Batch {
        let words: Vec<String> = ["who", "wrote", "hamlet", "shakespeare", "play"]
            .iter()
            .map(|w| w.to_string())
            .collect();
        let values: Vec<f32> = (0..words.len() * 4).map(|i| (i as f32).cos()).collect();
        let vectors = ansel_vectors::WordVectors::new(words, 4, values).unwrap();
        let mut qs = vec![
            question(
                "a",
                &["shakespeare wrote hamlet", "a play", "hamlet"],
                Some(0),
            ),
            question("b", &["a play", "hamlet wrote"], Some(1)),
        ];
        if third {
            qs.push(question("c", &["a play", "shakespeare"], Some(0)));
        }
        let vocab = Vocabulary::build(&[&qs], &vectors, 0);
        let limits = Limits {
            question_tokens: 10,
            candidate_tokens: 10,
        };
        let encoded: Vec<EncodedQuestion> = qs
            .iter()
            .enumerate()
            .map(|(i, q)| {
                let e = EncodedQuestion::new(q, &vocab, limits);
                if teacher {
                    e.with_teacher(TEACHER[i].to_vec(), i == 2)
                } else {
                    e
                }
            })
            .collect();
        Batch::new(&encoded.iter().collect::<Vec<_>>())
    }

    fn values(t: &Tensor) -> Vec<f32> {
        Vec::try_from(t.to_kind(Kind::Float).reshape([-1])).unwrap()
    }

    /// The loss and its gradient with respect to the `[questions, 3]` logits.
    fn loss_and_gradient(b: &Batch, loss: Loss, distill: Option<Distill>) -> (f64, Vec<f32>) {
        let logits: Vec<f32> =
            [0.4f32, -1.2, 2.5, 0.7, 0.1, -0.3, 1.1, 0.9, 0.0][..b.questions * 3].to_vec();
        let logits = Tensor::from_slice(&logits)
            .view([b.questions as i64, 3])
            .set_requires_grad(true);
        let l = b.loss(&logits, loss, distill);
        l.backward();
        (l.double_value(&[]), values(&logits.grad()))
    }

    #[test]
    fn weight_zero_gives_the_gold_loss_bit_for_bit() {
        let gold = batch(false, false);
        let taught = batch(true, false);
        for loss in [Loss::Listwise, Loss::Pointwise] {
            let (gold_loss, gold_grad) = loss_and_gradient(&gold, loss, None);
            for temperature in [0.5, 1.0, 3.0] {
                let d = Distill {
                    weight: 0.0,
                    temperature,
                };
                let (l, g) = loss_and_gradient(&taught, loss, Some(d));
                assert_eq!(l.to_bits(), gold_loss.to_bits(), "{loss:?} T={temperature}");
                assert_eq!(g, gold_grad, "{loss:?} T={temperature}");
                // And some weight changes it.
                let half = Distill {
                    weight: 0.5,
                    temperature,
                };
                assert_ne!(loss_and_gradient(&taught, loss, Some(half)).0, gold_loss);
            }
        }
    }

    #[test]
    fn weight_one_targets_are_the_teachers_softmax_and_sigmoid() {
        let b = batch(true, true);
        let temperature = 2.0;
        let d = Distill {
            weight: 1.0,
            temperature,
        };
        let listwise = values(&b.targets(Loss::Listwise, Some(d)));
        let pointwise = values(&b.targets(Loss::Pointwise, Some(d)));
        for (q, scores) in TEACHER.iter().enumerate() {
            let exp: Vec<f64> = scores
                .iter()
                .map(|&s| (s as f64 / temperature).exp())
                .collect();
            let sum: f64 = exp.iter().sum();
            for (k, &s) in scores.iter().enumerate() {
                let at = q * 3 + k;
                assert!(
                    (listwise[at] as f64 - exp[k] / sum).abs() < 1e-6,
                    "{listwise:?}"
                );
                let sigmoid = 1.0 / (1.0 + (-(s as f64) / temperature).exp());
                assert!(
                    (pointwise[at] as f64 - sigmoid).abs() < 1e-6,
                    "{pointwise:?}"
                );
            }
            // Padding gets no target.
            for k in scores.len()..3 {
                assert_eq!((listwise[q * 3 + k], pointwise[q * 3 + k]), (0.0, 0.0));
            }
        }
    }

    #[test]
    fn a_teacher_only_question_follows_the_teacher_whatever_the_weight() {
        let b = batch(true, true);
        let d = Distill {
            weight: 0.25,
            temperature: 1.0,
        };
        let t = values(&b.targets(Loss::Listwise, Some(d)));
        // Teacher-only: softmax(-2, 3), its gold label (candidate 0) ignored.
        let p = 1.0 / (1.0 + 5f64.exp());
        assert!((t[6] as f64 - p).abs() < 1e-6 && (t[7] as f64 - (1.0 - p)).abs() < 1e-6);
        // Answered: 0.75 * gold + 0.25 * softmax; candidate 0 of question a is the answer.
        let e: Vec<f64> = TEACHER[0].iter().map(|&s| (s as f64).exp()).collect();
        let soft0 = e[0] / e.iter().sum::<f64>();
        assert!((t[0] as f64 - (0.75 + 0.25 * soft0)).abs() < 1e-6, "{t:?}");
        let sum: f32 = t[..3].iter().sum();
        assert!((sum - 1.0).abs() < 1e-6);
    }
}
