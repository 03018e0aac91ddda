//! Tree kernels for answer sentence selection (the thesis' chapter 4, section 4.1).
//!
//! A text parsed once (by spaCy, at training time: `scripts/parse-shallow.py`) becomes a shallow
//! chunk tree: ROOT over chunk nodes (NP, VP, PP, ...) over part-of-speech nodes over lemmas.
//! For a (question, candidate) pair the nodes of words both texts share are marked `REL-`, and
//! the question's focus and the candidate's named entities of the type the question asks for are
//! marked `REL-FOCUS-<type>` ([`pair_trees`]). The subset tree kernel ([`Stk`]) counts the tree
//! fragments two trees share; a pair kernel adds the questions' and the candidates' kernels,
//! each normalised; [`svm::Svm`] learns from the precomputed kernel matrix.

pub mod svm;
pub mod tree;

pub use svm::{Svm, SvmOptions};
pub use tree::{pair_trees, ParsedText, Ptk, Stk, Token, Tree, TreeKernel};
