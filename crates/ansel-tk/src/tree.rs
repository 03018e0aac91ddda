//! Shallow chunk trees with REL and REL-FOCUS marks, and the subset tree kernel over them.

use serde::Deserialize;
use std::collections::HashSet;

/// One token as `scripts/parse-shallow.py` writes it: lower-cased lemma, Penn tag, universal
/// part of speech, chunk (`B-NP`, `I-NP`, `VP`, `PP`, `ADJP`, `ADVP`, `O`), entity type (or "").
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Token(pub String, pub String, pub String, pub String, pub String);

impl Token {
    fn lemma(&self) -> &str {
        &self.0
    }
    fn tag(&self) -> &str {
        &self.1
    }
    fn chunk(&self) -> &str {
        self.3
            .strip_prefix("I-")
            .or(self.3.strip_prefix("B-"))
            .unwrap_or(&self.3)
    }
    fn entity(&self) -> &str {
        &self.4
    }
}

/// A text and its tokens (one line of the parse script's output).
#[derive(Debug, Clone, Deserialize)]
pub struct ParsedText {
    pub text: String,
    pub tokens: Vec<Token>,
}

/// Words too common to relate a question to a candidate.
const STOP: &[&str] = &[
    "a", "an", "the", "be", "is", "are", "was", "were", "of", "in", "on", "at", "to", "for", "by",
    "with", "and", "or", "as", "that", "this", "it", "its", "from", "do", "does", "did", "have",
    "has", "had", "what", "which", "who", "whom", "whose", "when", "where", "why", "how", "-pron-",
    "he", "she", "they", "i", "you", "we", "his", "her", "their", "not", "no", "there", "than",
];

/// Entity types a question word asks for, by the question's wh-word (and "how many/much").
fn focus_types(question: &[Token]) -> Option<(usize, &'static str, &'static [&'static str])> {
    for (i, t) in question.iter().enumerate() {
        let next = question.get(i + 1).map_or("", Token::lemma);
        let asked: Option<(&str, &[&str])> = match t.lemma() {
            "who" | "whom" | "whose" => Some(("PER", &["PERSON", "ORG", "NORP"])),
            "when" => Some(("DATE", &["DATE", "TIME"])),
            "where" => Some(("LOC", &["GPE", "LOC", "FAC"])),
            "how"
                if matches!(
                    next,
                    "many" | "much" | "long" | "far" | "old" | "big" | "tall"
                ) =>
            {
                Some((
                    "NUM",
                    &["CARDINAL", "QUANTITY", "MONEY", "PERCENT", "DATE", "TIME"],
                ))
            }
            _ => None,
        };
        if let Some((name, types)) = asked {
            return Some((i, name, types));
        }
    }
    None
}

/// A labelled ordered tree, nodes in preorder (node 0 the root), with what the kernel needs.
#[derive(Debug, Clone)]
pub struct Tree {
    labels: Vec<String>,
    children: Vec<Vec<usize>>,
    /// Hash of a node's label and its children's labels; 0 for leaves.
    production: Vec<u64>,
    /// Internal nodes sorted by production.
    by_production: Vec<usize>,
    /// Hash of each node's label.
    label_hash: Vec<u64>,
    /// Every node sorted by label hash.
    by_label: Vec<usize>,
}

fn hash(parts: &[&str]) -> u64 {
    // FNV-1a over the parts with a separator: deterministic across runs.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.bytes().chain([0xff]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h.max(1)
}

impl Tree {
    /// ROOT over chunks over part-of-speech nodes over lemmas. `rel[i]`: token i is shared with
    /// the other text; `focus[i]`: its focus mark (`REL-FOCUS-<type>`).
    fn build(tokens: &[Token], rel: &[bool], focus: &[Option<&str>]) -> Tree {
        let mut tree = Tree {
            labels: vec!["ROOT".into()],
            children: vec![Vec::new()],
            production: Vec::new(),
            by_production: Vec::new(),
            label_hash: Vec::new(),
            by_label: Vec::new(),
        };
        let add = |tree: &mut Tree, parent: usize, label: String| {
            let id = tree.labels.len();
            tree.labels.push(label);
            tree.children.push(Vec::new());
            tree.children[parent].push(id);
            id
        };
        let mut i = 0;
        while i < tokens.len() {
            // A chunk: a B-NP and its I-NPs, or a run of tokens with the same other label.
            let kind = tokens[i].chunk().to_string();
            let mut end = i + 1;
            while end < tokens.len()
                && tokens[end].chunk() == kind
                && !(kind == "NP" && tokens[end].3.starts_with("B-"))
            {
                end += 1;
            }
            let span = i..end;
            let label = match span.clone().find_map(|k| focus[k]) {
                Some(f) => format!("REL-FOCUS-{f}-{kind}"),
                None if span.clone().any(|k| rel[k]) => format!("REL-{kind}"),
                None => kind,
            };
            let chunk = add(&mut tree, 0, label);
            for k in span {
                let tag = if rel[k] {
                    format!("REL-{}", tokens[k].tag())
                } else {
                    tokens[k].tag().to_string()
                };
                let pos = add(&mut tree, chunk, tag);
                add(&mut tree, pos, tokens[k].lemma().to_string());
            }
            i = end;
        }
        tree.index();
        tree
    }

    fn index(&mut self) {
        self.production = (0..self.labels.len())
            .map(|n| {
                if self.children[n].is_empty() {
                    return 0;
                }
                let mut parts = vec![self.labels[n].as_str()];
                parts.extend(self.children[n].iter().map(|&c| self.labels[c].as_str()));
                hash(&parts)
            })
            .collect();
        self.by_production = (0..self.labels.len())
            .filter(|&n| self.production[n] != 0)
            .collect();
        self.by_production.sort_by_key(|&n| (self.production[n], n));
        self.label_hash = self.labels.iter().map(|l| hash(&[l])).collect();
        self.by_label = (0..self.labels.len()).collect();
        self.by_label.sort_by_key(|&n| (self.label_hash[n], n));
    }

    pub fn len(&self) -> usize {
        self.labels.len()
    }

    pub fn is_empty(&self) -> bool {
        self.labels.len() <= 1
    }

    /// The tree in bracket notation, `(ROOT (NP (DT the) ...))`.
    pub fn brackets(&self) -> String {
        fn write(t: &Tree, n: usize, out: &mut String) {
            if t.children[n].is_empty() {
                out.push_str(&t.labels[n]);
                return;
            }
            out.push('(');
            out.push_str(&t.labels[n]);
            for &c in &t.children[n] {
                out.push(' ');
                write(t, c, out);
            }
            out.push(')');
        }
        let mut s = String::new();
        write(self, 0, &mut s);
        s
    }
}

/// The question's and the candidate's trees, marked against each other: `REL-` on the
/// part-of-speech and chunk nodes of content lemmas both texts hold, and `REL-FOCUS-<type>` on the
/// question's wh-word chunk and on the candidate's chunks holding an entity of the type it asks
/// for (who: person or organisation; when: date; where: place; how many/much/...: number), when
/// the candidate has one.
pub fn pair_trees(question: &[Token], candidate: &[Token]) -> (Tree, Tree) {
    let content =
        |t: &Token| t.lemma().chars().any(char::is_alphanumeric) && !STOP.contains(&t.lemma());
    let lemmas = |ts: &[Token]| -> HashSet<String> {
        ts.iter()
            .filter(|t| content(t))
            .map(|t| t.lemma().to_string())
            .collect()
    };
    let (ql, cl) = (lemmas(question), lemmas(candidate));
    let q_rel: Vec<bool> = question
        .iter()
        .map(|t| content(t) && cl.contains(t.lemma()))
        .collect();
    let c_rel: Vec<bool> = candidate
        .iter()
        .map(|t| content(t) && ql.contains(t.lemma()))
        .collect();
    let mut q_focus = vec![None; question.len()];
    let mut c_focus = vec![None; candidate.len()];
    if let Some((at, name, types)) = focus_types(question) {
        let mut found = false;
        for (k, t) in candidate.iter().enumerate() {
            if types.contains(&t.entity()) {
                c_focus[k] = Some(name);
                found = true;
            }
        }
        if found {
            q_focus[at] = Some(name);
        }
    }
    (
        Tree::build(question, &q_rel, &q_focus),
        Tree::build(candidate, &c_rel, &c_focus),
    )
}

/// The node pairs (one of `a`, one of `b`) whose keys are equal, deepest pairs first: `a_sorted`
/// and `b_sorted` list nodes sorted by key, so equal keys are found by one merge.
fn matching_pairs(
    a_sorted: &[usize],
    a_key: &[u64],
    b_sorted: &[usize],
    b_key: &[u64],
) -> Vec<(usize, usize)> {
    let mut pairs = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a_sorted.len() && j < b_sorted.len() {
        let (x, y) = (a_key[a_sorted[i]], b_key[b_sorted[j]]);
        if x < y {
            i += 1;
        } else if x > y {
            j += 1;
        } else {
            let i_end = i + a_sorted[i..].iter().take_while(|&&n| a_key[n] == x).count();
            let j_end = j + b_sorted[j..].iter().take_while(|&&n| b_key[n] == x).count();
            for &n1 in &a_sorted[i..i_end] {
                for &n2 in &b_sorted[j..j_end] {
                    pairs.push((n1, n2));
                }
            }
            i = i_end;
            j = j_end;
        }
    }
    // Children come after their parents in preorder: deepest pairs first.
    pairs.sort_unstable_by(|p, q| q.cmp(p));
    pairs
}

/// The sum of `node_delta` over node pairs, deepest first, each computed from the deltas of the
/// pairs below it (`child_delta`: 0 for a pair that is not in `pairs`). The deltas are a dense
/// table: trees are small, and the lookups are the kernels' inner loop.
fn sum_deltas(
    a: &Tree,
    b: &Tree,
    pairs: Vec<(usize, usize)>,
    mut node_delta: impl FnMut(usize, usize, &dyn Fn(usize, usize) -> f64) -> f64,
) -> f64 {
    let width = b.len();
    let mut delta = vec![0.0; a.len() * width];
    let mut total = 0.0;
    for (n1, n2) in pairs {
        let d = node_delta(n1, n2, &|x, y| delta[x * width + y]);
        delta[n1 * width + n2] = d;
        total += d;
    }
    total
}

/// The subset tree kernel (Collins & Duffy 2002): the fragments two trees share, each weighted by
/// `lambda` to the power of its size.
#[derive(Debug, Clone, Copy)]
pub struct Stk {
    pub lambda: f64,
}

impl Stk {
    pub fn kernel(&self, a: &Tree, b: &Tree) -> f64 {
        let pairs = matching_pairs(
            &a.by_production,
            &a.production,
            &b.by_production,
            &b.production,
        );
        sum_deltas(a, b, pairs, |n1, n2, child| {
            let (c1, c2) = (&a.children[n1], &b.children[n2]);
            let preterminal = c1.iter().all(|&c| a.children[c].is_empty());
            if preterminal {
                self.lambda
            } else {
                self.lambda
                    * c1.iter()
                        .zip(c2)
                        .map(|(&x, &y)| 1.0 + child(x, y))
                        .product::<f64>()
            }
        })
    }
}

/// The partial tree kernel (Moschitti 2006): the fragments two trees share where a node may keep
/// any subsequence of its children, so a fragment need not hold whole productions. Each node of
/// a fragment weighs `mu`, a node with no child kept `mu * lambda^2`, and kept children are
/// decayed by `lambda` per child skipped between them (the recursion of SVM-light-TK's PTK,
/// which the thesis used).
#[derive(Debug, Clone, Copy)]
pub struct Ptk {
    pub lambda: f64,
    pub mu: f64,
}

impl Ptk {
    pub fn kernel(&self, a: &Tree, b: &Tree) -> f64 {
        let pairs = matching_pairs(&a.by_label, &a.label_hash, &b.by_label, &b.label_hash);
        let mut scratch = (Vec::new(), Vec::new());
        sum_deltas(a, b, pairs, |n1, n2, child| {
            self.delta((&a.children[n1], &b.children[n2]), child, &mut scratch)
        })
    }

    /// Delta of two nodes with equal labels and these children, from their children's deltas.
    fn delta(
        &self,
        (c1, c2): (&[usize], &[usize]),
        child_delta: &dyn Fn(usize, usize) -> f64,
        (dps, dp): &mut (Vec<f64>, Vec<f64>),
    ) -> f64 {
        let (lambda, lambda2) = (self.lambda, self.lambda * self.lambda);
        if c1.is_empty() || c2.is_empty() {
            return self.mu * lambda2;
        }
        let (n, m) = (c1.len(), c2.len());
        let child = |i: usize, j: usize| child_delta(c1[i], c2[j]);
        let at = |i: usize, j: usize| i * (m + 1) + j;
        // dps[i][j]: common child subsequences of the current length ending at children i and j
        // (1-based); dp[i][j]: their sum over every end up to (i, j), gaps decayed by lambda.
        dps.clear();
        dps.resize((n + 1) * (m + 1), 0.0);
        dp.clear();
        dp.resize((n + 1) * (m + 1), 0.0);
        let mut sum = 0.0;
        for i in 1..=n {
            for j in 1..=m {
                dps[at(i, j)] = child(i - 1, j - 1);
                sum += dps[at(i, j)];
            }
        }
        for len in 1..n.min(m) {
            for j in 0..=m {
                dp[at(len - 1, j)] = 0.0;
            }
            for i in 0..=n {
                dp[at(i, len - 1)] = 0.0;
            }
            for i in len..=n {
                for j in len..=m {
                    dp[at(i, j)] =
                        dps[at(i, j)] + lambda * dp[at(i - 1, j)] + lambda * dp[at(i, j - 1)]
                            - lambda2 * dp[at(i - 1, j - 1)];
                    dps[at(i, j)] = child(i - 1, j - 1) * dp[at(i - 1, j - 1)];
                    sum += dps[at(i, j)];
                }
            }
        }
        self.mu * (lambda2 + sum)
    }
}

/// A tree kernel: which of the two, with its decays.
#[derive(Debug, Clone, Copy)]
pub enum TreeKernel {
    Subset(Stk),
    Partial(Ptk),
}

impl TreeKernel {
    pub fn kernel(&self, a: &Tree, b: &Tree) -> f64 {
        match self {
            TreeKernel::Subset(k) => k.kernel(a, b),
            TreeKernel::Partial(k) => k.kernel(a, b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tok(lemma: &str, tag: &str, chunk: &str, ent: &str) -> Token {
        Token(
            lemma.into(),
            tag.into(),
            String::new(),
            chunk.into(),
            ent.into(),
        )
    }

    fn who() -> Vec<Token> {
        vec![
            tok("who", "WP", "O", ""),
            tok("invent", "VBD", "VP", ""),
            tok("the", "DT", "B-NP", ""),
            tok("telephone", "NN", "I-NP", ""),
        ]
    }

    fn bell() -> Vec<Token> {
        vec![
            tok("bell", "NNP", "B-NP", "PERSON"),
            tok("invent", "VBD", "VP", ""),
            tok("the", "DT", "B-NP", ""),
            tok("telephone", "NN", "I-NP", ""),
        ]
    }

    #[test]
    fn shared_words_and_the_asked_entity_are_marked() {
        let (q, a) = pair_trees(&who(), &bell());
        assert_eq!(
            q.brackets(),
            "(ROOT (REL-FOCUS-PER-O (WP who)) (REL-VP (REL-VBD invent)) (REL-NP (DT the) (REL-NN telephone)))"
        );
        assert_eq!(
            a.brackets(),
            "(ROOT (REL-FOCUS-PER-NP (NNP bell)) (REL-VP (REL-VBD invent)) (REL-NP (DT the) (REL-NN telephone)))"
        );
        // No person in the candidate: no focus mark on either side.
        let mut other = bell();
        other[0].4 = String::new();
        let (q, _) = pair_trees(&who(), &other);
        assert!(
            q.brackets().starts_with("(ROOT (O (WP who))"),
            "{}",
            q.brackets()
        );
    }

    #[test]
    fn the_kernel_counts_shared_fragments() {
        let stk = Stk { lambda: 1.0 };
        // (A (B x)) against itself: fragments (B x), (A B), (A (B x)): 3.
        let t = |label: &str| {
            let mut tree = Tree {
                labels: vec!["A".into(), label.into(), "x".into()],
                children: vec![vec![1], vec![2], vec![]],
                production: vec![],
                by_production: vec![],
                label_hash: vec![],
                by_label: vec![],
            };
            tree.index();
            tree
        };
        assert_eq!(stk.kernel(&t("B"), &t("B")), 3.0);
        assert_eq!(stk.kernel(&t("B"), &t("C")), 0.0);
        let (q, a) = pair_trees(&who(), &bell());
        let k = Stk { lambda: 0.4 };
        let (qq, aa, qa) = (k.kernel(&q, &q), k.kernel(&a, &a), k.kernel(&q, &a));
        assert!(qa > 0.0 && qa < qq.min(aa), "{qa} {qq} {aa}");
        assert!(
            (k.kernel(&q, &a) - k.kernel(&a, &q)).abs() < 1e-12,
            "symmetric"
        );
    }

    /// A tree from bracket notation, `(A (B x) c)`.
    fn parse(text: &str) -> Tree {
        let mut tree = Tree {
            labels: vec![],
            children: vec![],
            production: vec![],
            by_production: vec![],
            label_hash: vec![],
            by_label: vec![],
        };
        let mut open: Vec<usize> = Vec::new();
        let spaced = text.replace('(', " ( ").replace(')', " ) ");
        let mut tokens = spaced.split_whitespace().peekable();
        while let Some(t) = tokens.next() {
            match t {
                "(" => {
                    let label = tokens.next().expect("a label after (");
                    let id = tree.labels.len();
                    tree.labels.push(label.into());
                    tree.children.push(vec![]);
                    if let Some(&parent) = open.last() {
                        tree.children[parent].push(id);
                    }
                    open.push(id);
                }
                ")" => {
                    open.pop();
                }
                leaf => {
                    let id = tree.labels.len();
                    tree.labels.push(leaf.into());
                    tree.children.push(vec![]);
                    tree.children[*open.last().expect("a leaf inside a node")].push(id);
                }
            }
        }
        tree.index();
        tree
    }

    #[test]
    fn the_partial_tree_kernel_counts_shared_partial_fragments() {
        // With mu = lambda = 1 the kernel is the number of shared fragments, a node keeping any
        // subsequence of its children.
        let count = Ptk {
            lambda: 1.0,
            mu: 1.0,
        };
        let k = |a: &str, b: &str| count.kernel(&parse(a), &parse(b));
        // x, B, (B x), A, (A B), (A (B x)).
        assert_eq!(k("(A (B x))", "(A (B x))"), 6.0);
        // b, c, A, (A b), (A c), (A b c).
        assert_eq!(k("(A b c)", "(A b c)"), 6.0);
        // A gap in the other tree still matches (A b c) when gaps cost nothing ...
        assert_eq!(k("(A b c)", "(A b d c)"), 6.0);
        // ... and order matters: (A b c) is not in (A c b).
        assert_eq!(k("(A b c)", "(A c b)"), 5.0);
        // The subset tree kernel only matches whole productions: (A b c) alone.
        assert_eq!(
            Stk { lambda: 1.0 }.kernel(&parse("(A b c)"), &parse("(A b c)")),
            1.0
        );
        assert_eq!(
            Stk { lambda: 1.0 }.kernel(&parse("(A b c)"), &parse("(A b d c)")),
            0.0
        );
        // A gap costs lambda per skipped child.
        let decayed = Ptk {
            lambda: 0.5,
            mu: 1.0,
        };
        let d = |a: &str, b: &str| decayed.kernel(&parse(a), &parse(b));
        assert!(d("(A b c)", "(A b d c)") < d("(A b c)", "(A b c)"));
        // Leaves b, c: 2 * mu * lambda^2; A: mu * (lambda^2 + b + c + (A b c) with one gap).
        let leaf = 0.25;
        let expected = 2.0 * leaf + (0.25 + 2.0 * leaf + leaf * leaf * 0.5);
        assert!((d("(A b c)", "(A b d c)") - expected).abs() < 1e-12);
    }

    #[test]
    fn the_partial_tree_kernel_is_symmetric_and_peaks_on_identical_pairs() {
        let (q, a) = pair_trees(&who(), &bell());
        let k = TreeKernel::Partial(Ptk {
            lambda: 0.4,
            mu: 0.4,
        });
        let (qq, aa, qa) = (k.kernel(&q, &q), k.kernel(&a, &a), k.kernel(&q, &a));
        assert!(qa > 0.0 && qa < qq.min(aa), "{qa} {qq} {aa}");
        assert!((qa - k.kernel(&a, &q)).abs() < 1e-12, "symmetric");
        // Partial fragments include the subset trees' whole productions and more.
        let stk = TreeKernel::Subset(Stk { lambda: 0.4 });
        assert!(
            Ptk {
                lambda: 1.0,
                mu: 1.0
            }
            .kernel(&q, &a)
                > Stk { lambda: 1.0 }.kernel(&q, &a)
        );
        assert!(stk.kernel(&q, &a) > 0.0);
    }
}
