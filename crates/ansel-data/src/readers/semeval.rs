//! SemEval-2016 Task 3 (community question answering on the Qatar Living forum), English XML.
//!
//! A file is a root element holding `OrgQuestion`s (an original question, `ORGQ_ID`, with its
//! `OrgQSubject` and `OrgQBody`) each with one or more `Thread`s; a thread holds a related
//! question (`RelQuestion`: `RELQ_ID`, the search engine's `RELQ_RANKING_ORDER`, its
//! `RelQSubject`, `RelQBody` and `RELQ_RELEVANCE2ORGQ`) and its comments (`RelComment`:
//! `RELC_ID`, `RelCText`, `RELC_RELEVANCE2ORGQ`, `RELC_RELEVANCE2RELQ`). The official files
//! repeat an `OrgQuestion` element once per thread; elements with the same `ORGQ_ID` are merged.
//! The `-subtaskA` files hold `Thread`s directly under the root. Other elements (the
//! `-with-multiline` variants' `OrgQClean`, ...) are skipped.
//!
//! Each subtask becomes ansel question lists, labelled as SemEval scores them:
//! - **A**: a related question (subject and body) over its thread's comments; `Good` (to the
//!   related question) is positive, `PotentiallyUseful` and `Bad` negative. Threads marked
//!   `SubtaskA_Skip_Because_Same_As_RelQuestion_ID` repeat an earlier thread and are left out.
//! - **B**: an original question over its related questions; `PerfectMatch` and `Relevant`
//!   are positive, `Irrelevant` negative.
//! - **C**: an original question over the comments of all its threads; `Good` (to the original
//!   question) is positive.
//!
//! Ids are SemEval's (`RELQ_ID`, `ORGQ_ID`; `RELC_ID`, `RELQ_ID`), so runs can be written in
//! SemEval's format, in the file's order. Candidates keep the search engine's order as document
//! context: in A a comment's position in its thread; in B and C the candidate's place in the
//! search engine's list (threads by `RELQ_RANKING_ORDER`, then comments in thread order), so
//! `rr` is SemEval's IR baseline. A comment's document title is its related question (subject
//! and body), so models of the triplet <original question, related question, comment> can read it.
//!
//! The file is read as a stream of XML events (quick-xml), keeping only the records it holds;
//! the DTD is skipped, and only XML's predefined entities and character references are resolved.

use crate::model::link_neighbours;
use crate::{Candidate, DataError, DocContext, Question};
use quick_xml::events::{BytesStart, Event};
use quick_xml::{Reader, XmlVersion};
use std::collections::HashMap;
use std::path::Path;

/// A subtask of SemEval-2016 Task 3 (English).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CqaTask {
    /// Question-comment similarity: a related question's own comments.
    A,
    /// Question-question similarity: an original question's related questions.
    B,
    /// Question-external comment similarity: an original question's 100 comments.
    C,
}

impl CqaTask {
    pub const NAMES: [&'static str; 3] = ["a", "b", "c"];

    pub fn name(self) -> &'static str {
        match self {
            CqaTask::A => "a",
            CqaTask::B => "b",
            CqaTask::C => "c",
        }
    }

    /// The attribute holding the task's gold label.
    pub fn label_field(self) -> &'static str {
        match self {
            CqaTask::A => "RELC_RELEVANCE2RELQ",
            CqaTask::B => "RELQ_RELEVANCE2ORGQ",
            CqaTask::C => "RELC_RELEVANCE2ORGQ",
        }
    }
}

impl std::str::FromStr for CqaTask {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "a" => Ok(CqaTask::A),
            "b" => Ok(CqaTask::B),
            "c" => Ok(CqaTask::C),
            _ => Err(format!("unknown SemEval task {s:?}; expected a, b or c")),
        }
    }
}

/// How a related question relates to the original one (`RELQ_RELEVANCE2ORGQ`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuestionRelevance {
    PerfectMatch,
    Relevant,
    Irrelevant,
}

impl QuestionRelevance {
    /// Positive for task B: `PerfectMatch` and `Relevant` (merged at test time).
    pub fn is_positive(self) -> bool {
        self != QuestionRelevance::Irrelevant
    }
}

/// How good a comment is for a question (`RELC_RELEVANCE2ORGQ`, `RELC_RELEVANCE2RELQ`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommentRelevance {
    Good,
    PotentiallyUseful,
    Bad,
}

impl CommentRelevance {
    /// Positive for tasks A and C: `Good` only (`PotentiallyUseful` is merged with `Bad`).
    pub fn is_positive(self) -> bool {
        self == CommentRelevance::Good
    }
}

/// A whole file, in its order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CqaFile {
    pub originals: Vec<OrgQuestion>,
    /// Threads directly under the root (the `-subtaskA` files).
    pub loose_threads: Vec<Thread>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct OrgQuestion {
    pub id: String,
    pub subject: String,
    pub body: String,
    pub threads: Vec<Thread>,
    /// Line of the first `OrgQuestion` element with this id.
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Thread {
    /// `THREAD_SEQUENCE` (the related question's id when absent).
    pub id: String,
    /// `SubtaskA_Skip_Because_Same_As_RelQuestion_ID`: the thread repeats this earlier one.
    pub same_as: Option<String>,
    pub question: RelQuestion,
    pub comments: Vec<RelComment>,
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RelQuestion {
    pub id: String,
    /// `RELQ_RANKING_ORDER`: the thread's rank in the search engine's results.
    pub ranking_order: Option<usize>,
    pub category: Option<String>,
    pub subject: String,
    pub body: String,
    /// `RELQ_RELEVANCE2ORGQ`; `None` when absent or `N/A`.
    pub relevance: Option<QuestionRelevance>,
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RelComment {
    pub id: String,
    pub text: String,
    /// `RELC_RELEVANCE2ORGQ`; `None` when absent or `N/A`.
    pub to_original: Option<CommentRelevance>,
    /// `RELC_RELEVANCE2RELQ`; `None` when absent or `N/A` (the v2.0 train part 1).
    pub to_related: Option<CommentRelevance>,
    pub line: usize,
}

impl CqaFile {
    /// Every thread in file order (those of the original questions, then the loose ones).
    pub fn threads(&self) -> impl Iterator<Item = &Thread> {
        self.originals
            .iter()
            .flat_map(|o| o.threads.iter())
            .chain(&self.loose_threads)
    }

    /// The question lists of `task` (see the module documentation). A candidate without the
    /// task's label is an error naming its line and the attribute: a file without labels for a
    /// task cannot be scored on it.
    pub fn task_questions(&self, path: &Path, task: CqaTask) -> Result<Vec<Question>, DataError> {
        let missing = |line: usize, what: &str| {
            DataError::malformed(
                path,
                Some(line),
                Some(task.label_field()),
                format!(
                    "{what} has no task {} label (absent or N/A), so this file cannot be read for task {}",
                    task.name().to_uppercase(),
                    task.name().to_uppercase()
                ),
            )
        };
        if task != CqaTask::A && self.originals.is_empty() && !self.loose_threads.is_empty() {
            return Err(DataError::malformed(
                path,
                Some(self.loose_threads[0].line),
                Some("OrgQuestion"),
                format!(
                    "task {} needs original questions; this file holds threads only (a -subtaskA file?)",
                    task.name().to_uppercase()
                ),
            ));
        }
        match task {
            CqaTask::A => self
                .threads()
                .filter(|t| t.same_as.is_none())
                .map(|thread| {
                    let doc_id = thread.question.id.clone();
                    let mut candidates = thread
                        .comments
                        .iter()
                        .enumerate()
                        .map(|(position, c)| {
                            let label = c
                                .to_related
                                .ok_or_else(|| missing(c.line, &format!("comment {:?}", c.id)))?;
                            Ok(Candidate {
                                id: c.id.clone(),
                                text: c.text.clone(),
                                label: Some(label.is_positive()),
                                context: Some(DocContext {
                                    doc_id: doc_id.clone(),
                                    title: Some(join_subject_body(
                                        &thread.question.subject,
                                        &thread.question.body,
                                    )),
                                    position,
                                    prev: None,
                                    next: None,
                                }),
                            })
                        })
                        .collect::<Result<Vec<_>, DataError>>()?;
                    link_neighbours(&mut candidates);
                    Ok(Question {
                        id: thread.question.id.clone(),
                        text: join_subject_body(&thread.question.subject, &thread.question.body),
                        candidates,
                    })
                })
                .collect(),
            CqaTask::B => self
                .originals
                .iter()
                .map(|org| {
                    let places = search_engine_places(&org.threads, |_| 1);
                    let mut candidates = org
                        .threads
                        .iter()
                        .zip(places)
                        .map(|(thread, position)| {
                            let q = &thread.question;
                            let label = q.relevance.ok_or_else(|| {
                                missing(q.line, &format!("related question {:?}", q.id))
                            })?;
                            Ok(Candidate {
                                id: q.id.clone(),
                                text: join_subject_body(&q.subject, &q.body),
                                label: Some(label.is_positive()),
                                context: Some(DocContext {
                                    doc_id: org.id.clone(),
                                    title: None,
                                    position,
                                    prev: None,
                                    next: None,
                                }),
                            })
                        })
                        .collect::<Result<Vec<_>, DataError>>()?;
                    link_neighbours(&mut candidates);
                    Ok(Question {
                        id: org.id.clone(),
                        text: join_subject_body(&org.subject, &org.body),
                        candidates,
                    })
                })
                .collect(),
            CqaTask::C => self
                .originals
                .iter()
                .map(|org| {
                    let starts = search_engine_places(&org.threads, |t| t.comments.len());
                    let mut candidates = Vec::new();
                    for (thread, start) in org.threads.iter().zip(starts) {
                        for (i, c) in thread.comments.iter().enumerate() {
                            let label = c
                                .to_original
                                .ok_or_else(|| missing(c.line, &format!("comment {:?}", c.id)))?;
                            candidates.push(Candidate {
                                id: c.id.clone(),
                                text: c.text.clone(),
                                label: Some(label.is_positive()),
                                context: Some(DocContext {
                                    doc_id: org.id.clone(),
                                    title: Some(join_subject_body(
                                        &thread.question.subject,
                                        &thread.question.body,
                                    )),
                                    position: start + i,
                                    prev: None,
                                    next: None,
                                }),
                            });
                        }
                    }
                    link_neighbours(&mut candidates);
                    Ok(Question {
                        id: org.id.clone(),
                        text: join_subject_body(&org.subject, &org.body),
                        candidates,
                    })
                })
                .collect(),
        }
    }
}

impl CqaFile {
    /// Splits the file by original question: a seeded random `fraction` of the original
    /// questions (rounded, at least one when there are two or more) with all their threads goes
    /// to the second part, the rest to the first, each part in file order. Loose threads (a
    /// `-subtaskA` file) are split the same way, one by one. The same seed always gives the same
    /// split.
    pub fn split_originals(&self, fraction: f64, seed: u64) -> (CqaFile, CqaFile) {
        self.split_held(seed, |n| {
            let mut take = (fraction.clamp(0.0, 1.0) * n as f64).round() as usize;
            if take == 0 && fraction > 0.0 && n >= 2 {
                take = 1;
            }
            0..take
        })
    }

    /// Splits the file by original question for cross-validation: the seeded order of
    /// [`CqaFile::split_originals`] cut into `folds` near-equal folds; fold `fold` (from 0) goes
    /// to the second part. The folds of one seed hold every original question exactly once.
    pub fn split_originals_fold(&self, fold: usize, folds: usize, seed: u64) -> (CqaFile, CqaFile) {
        let folds = folds.max(1);
        self.split_held(seed, |n| fold * n / folds..((fold + 1) * n / folds).min(n))
    }

    /// The original questions (and loose threads) at the places `held` gives in their seeded
    /// order go to the second part.
    fn split_held(
        &self,
        seed: u64,
        held: impl Fn(usize) -> std::ops::Range<usize>,
    ) -> (CqaFile, CqaFile) {
        let pick = |n: usize| {
            let mut order: Vec<usize> = (0..n).collect();
            crate::shuffle_seeded(&mut order, seed);
            let mut out = vec![false; n];
            for &i in order.get(held(n)).unwrap_or_default() {
                out[i] = true;
            }
            out
        };
        fn part<T: Clone>(items: &[T], held: &[bool]) -> (Vec<T>, Vec<T>) {
            let (mut kept, mut out) = (Vec::new(), Vec::new());
            for (item, &h) in items.iter().zip(held) {
                if h { &mut out } else { &mut kept }.push(item.clone());
            }
            (kept, out)
        }
        let (originals, held_originals) = part(&self.originals, &pick(self.originals.len()));
        let (loose, held_loose) = part(&self.loose_threads, &pick(self.loose_threads.len()));
        (
            CqaFile {
                originals,
                loose_threads: loose,
            },
            CqaFile {
                originals: held_originals,
                loose_threads: held_loose,
            },
        )
    }
}

/// Where each thread's first item sits in the search engine's list: threads ordered by
/// `RELQ_RANKING_ORDER` (file order among equal or missing ranks), each taking `size` places.
fn search_engine_places(threads: &[Thread], size: impl Fn(&Thread) -> usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..threads.len()).collect();
    order.sort_by_key(|&i| threads[i].question.ranking_order.unwrap_or(usize::MAX));
    let mut places = vec![0; threads.len()];
    let mut next = 0;
    for i in order {
        places[i] = next;
        next += size(&threads[i]);
    }
    places
}

/// A question's text: its subject and body, the subject ending in a full stop when it has no
/// punctuation of its own (forum bodies often repeat the subject; both are kept).
pub fn join_subject_body(subject: &str, body: &str) -> String {
    let (subject, body) = (subject.trim(), body.trim());
    match (subject.is_empty(), body.is_empty()) {
        (_, true) => subject.to_string(),
        (true, false) => body.to_string(),
        (false, false) => {
            let stop = if subject.ends_with(['.', '?', '!', ':', ';']) {
                ""
            } else {
                "."
            };
            format!("{subject}{stop} {body}")
        }
    }
}

/// The question lists of `task` in a SemEval-2016 Task 3 file.
pub fn parse(path: &Path, bytes: &[u8], task: CqaTask) -> Result<Vec<Question>, DataError> {
    parse_file(path, bytes)?.task_questions(path, task)
}

/// [`parse`] for task A, B or C, as the shared reader tests call readers.
pub fn parse_a(path: &Path, bytes: &[u8]) -> Result<Vec<Question>, DataError> {
    parse(path, bytes, CqaTask::A)
}
pub fn parse_b(path: &Path, bytes: &[u8]) -> Result<Vec<Question>, DataError> {
    parse(path, bytes, CqaTask::B)
}
pub fn parse_c(path: &Path, bytes: &[u8]) -> Result<Vec<Question>, DataError> {
    parse(path, bytes, CqaTask::C)
}

/// Reads the whole structure of a SemEval-2016 Task 3 file.
pub fn parse_file(path: &Path, bytes: &[u8]) -> Result<CqaFile, DataError> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let line = 1 + bytes[..e.valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        DataError::malformed(path, Some(line), None, format!("invalid UTF-8: {e}"))
    })?;
    Parser::new(path, text).file()
}

/// `<name ...>` just read, and the line it starts on.
struct Open<'a> {
    start: BytesStart<'a>,
    line: usize,
    /// `<name .../>`: no children, no end tag.
    empty: bool,
}

struct Parser<'a> {
    path: &'a Path,
    text: &'a str,
    reader: Reader<&'a [u8]>,
    /// The last offset whose line is known, and that line (offsets only grow while reading).
    line_mark: (usize, usize),
}

type Parsed<T> = Result<T, DataError>;

impl<'a> Parser<'a> {
    fn new(path: &'a Path, text: &'a str) -> Self {
        let mut reader = Reader::from_str(text);
        reader.config_mut().check_end_names = true;
        Parser {
            path,
            text,
            reader,
            line_mark: (0, 1),
        }
    }

    /// 1-based line of a byte offset.
    fn line_at(&mut self, offset: usize) -> usize {
        let offset = offset.min(self.text.len());
        let (from, line) = if offset >= self.line_mark.0 {
            self.line_mark
        } else {
            (0, 1)
        };
        let line = line
            + self.text.as_bytes()[from..offset]
                .iter()
                .filter(|&&b| b == b'\n')
                .count();
        self.line_mark = (offset, line);
        line
    }

    fn error(&self, line: usize, field: Option<&str>, message: impl Into<String>) -> DataError {
        DataError::malformed(self.path, Some(line), field, message)
    }

    /// The next event and the line it starts on (leading whitespace of text skipped).
    fn next(&mut self) -> Parsed<(Event<'a>, usize)> {
        let offset = self.reader.buffer_position() as usize;
        match self.reader.read_event() {
            Ok(event) => {
                let skip = match &event {
                    Event::Text(t) => t.len() - t.trim_start().len(),
                    _ => 0,
                };
                let line = self.line_at(offset + skip);
                Ok((event, line))
            }
            Err(e) => {
                let at = self.reader.error_position() as usize;
                let line = self.line_at(at);
                Err(self.error(line, None, format!("not well-formed XML: {e}")))
            }
        }
    }

    fn file(mut self) -> Parsed<CqaFile> {
        let mut file = CqaFile::default();
        // The prolog, up to the root element.
        let root = loop {
            match self.next()? {
                (Event::Start(e), _) => break name_of(&e),
                (Event::Eof, _) => return Ok(file),
                (Event::Empty(_), _) => return Ok(file),
                (Event::Text(t), line) if !t.trim().is_empty() => {
                    return Err(self.error(line, None, "text before the root element"))
                }
                (Event::End(e), line) => {
                    return Err(self.error(
                        line,
                        None,
                        format!("unexpected </{}>", e.name().as_ref()),
                    ))
                }
                _ => {}
            }
        };
        let mut by_id: HashMap<String, usize> = HashMap::new();
        loop {
            let (event, line) = self.next()?;
            match event {
                Event::Start(ref start) | Event::Empty(ref start)
                    if start.name().as_ref() == "OrgQuestion" =>
                {
                    let empty = matches!(event, Event::Empty(_));
                    let start = start.clone();
                    let org = self.org_question(Open { start, line, empty })?;
                    match by_id.get(&org.id) {
                        Some(&i) => {
                            let earlier = &mut file.originals[i];
                            for (field, a, b) in [
                                ("OrgQSubject", &earlier.subject, &org.subject),
                                ("OrgQBody", &earlier.body, &org.body),
                            ] {
                                if a != b {
                                    return Err(self.error(
                                        line,
                                        Some(field),
                                        format!(
                                            "differs from that of the OrgQuestion {:?} on line {}",
                                            org.id, earlier.line
                                        ),
                                    ));
                                }
                            }
                            earlier.threads.extend(org.threads);
                        }
                        None => {
                            by_id.insert(org.id.clone(), file.originals.len());
                            file.originals.push(org);
                        }
                    }
                }
                Event::Start(ref start) | Event::Empty(ref start)
                    if start.name().as_ref() == "Thread" =>
                {
                    let empty = matches!(event, Event::Empty(_));
                    let start = start.clone();
                    let thread = self.thread(Open { start, line, empty })?;
                    file.loose_threads.push(thread);
                }
                Event::Start(start) => self.skip(&start, line)?,
                Event::End(_) => break,
                Event::Eof => {
                    return Err(self.error(line, None, format!("the file ends inside <{root}>")))
                }
                Event::Text(t) if !t.trim().is_empty() => {
                    return Err(self.error(line, None, format!("unexpected text inside <{root}>")))
                }
                _ => {}
            }
        }
        // Only whitespace, comments and processing instructions may follow the root.
        loop {
            match self.next()? {
                (Event::Eof, _) => return Ok(file),
                (Event::Text(t), _) if t.trim().is_empty() => {}
                (Event::Comment(_) | Event::PI(_), _) => {}
                (_, line) => {
                    return Err(self.error(line, None, format!("content after the root </{root}>")))
                }
            }
        }
    }

    fn org_question(&mut self, open: Open<'a>) -> Parsed<OrgQuestion> {
        let attrs = self.attributes(&open)?;
        let id = self.required(&open, &attrs, "ORGQ_ID")?;
        let (mut subject, mut body, mut threads) = (None, None, Vec::new());
        self.children(&open, |p, child| {
            match child.start.name().as_ref() {
                "OrgQSubject" => subject = Some(p.text_of(&child)?),
                "OrgQBody" => body = Some(p.text_of(&child)?),
                "Thread" => threads.push(p.thread(child)?),
                _ => p.skip_open(&child)?,
            }
            Ok(())
        })?;
        Ok(OrgQuestion {
            subject: self.present(&open, subject, "OrgQSubject")?,
            body: self.present(&open, body, "OrgQBody")?,
            id,
            threads,
            line: open.line,
        })
    }

    fn thread(&mut self, open: Open<'a>) -> Parsed<Thread> {
        let attrs = self.attributes(&open)?;
        let sequence = attr(&attrs, "THREAD_SEQUENCE");
        let same_as = attr(&attrs, "SubtaskA_Skip_Because_Same_As_RelQuestion_ID");
        let (mut question, mut comments) = (None, Vec::new());
        self.children(&open, |p, child| {
            match child.start.name().as_ref() {
                "RelQuestion" => {
                    if question.is_some() {
                        return Err(p.error(
                            child.line,
                            Some("RelQuestion"),
                            "a second RelQuestion in one Thread",
                        ));
                    }
                    question = Some(p.rel_question(child)?)
                }
                "RelComment" => comments.push(p.rel_comment(child)?),
                _ => p.skip_open(&child)?,
            }
            Ok(())
        })?;
        let question = self.present(&open, question, "RelQuestion")?;
        Ok(Thread {
            id: sequence.unwrap_or_else(|| question.id.clone()),
            same_as: same_as.filter(|s| !s.is_empty()),
            question,
            comments,
            line: open.line,
        })
    }

    fn rel_question(&mut self, open: Open<'a>) -> Parsed<RelQuestion> {
        let attrs = self.attributes(&open)?;
        let id = self.required(&open, &attrs, "RELQ_ID")?;
        let ranking_order = match attr(&attrs, "RELQ_RANKING_ORDER") {
            None => None,
            Some(v) => Some(v.trim().parse::<usize>().map_err(|_| {
                self.error(
                    open.line,
                    Some("RELQ_RANKING_ORDER"),
                    format!("expected a whole number, found {v:?}"),
                )
            })?),
        };
        let relevance = self.label(
            &open,
            &attrs,
            "RELQ_RELEVANCE2ORGQ",
            |v| match v {
                "PerfectMatch" => Some(QuestionRelevance::PerfectMatch),
                "Relevant" => Some(QuestionRelevance::Relevant),
                "Irrelevant" => Some(QuestionRelevance::Irrelevant),
                _ => None,
            },
            "PerfectMatch, Relevant, Irrelevant or N/A",
        )?;
        let (mut subject, mut body) = (None, None);
        self.children(&open, |p, child| {
            match child.start.name().as_ref() {
                "RelQSubject" => subject = Some(p.text_of(&child)?),
                "RelQBody" => body = Some(p.text_of(&child)?),
                _ => p.skip_open(&child)?,
            }
            Ok(())
        })?;
        Ok(RelQuestion {
            subject: self.present(&open, subject, "RelQSubject")?,
            body: self.present(&open, body, "RelQBody")?,
            id,
            ranking_order,
            category: attr(&attrs, "RELQ_CATEGORY"),
            relevance,
            line: open.line,
        })
    }

    fn rel_comment(&mut self, open: Open<'a>) -> Parsed<RelComment> {
        let attrs = self.attributes(&open)?;
        let id = self.required(&open, &attrs, "RELC_ID")?;
        let comment_label = |v: &str| match v {
            "Good" => Some(CommentRelevance::Good),
            "PotentiallyUseful" => Some(CommentRelevance::PotentiallyUseful),
            "Bad" => Some(CommentRelevance::Bad),
            _ => None,
        };
        const EXPECTED: &str = "Good, PotentiallyUseful, Bad or N/A";
        let to_original = self.label(
            &open,
            &attrs,
            "RELC_RELEVANCE2ORGQ",
            comment_label,
            EXPECTED,
        )?;
        let to_related = self.label(
            &open,
            &attrs,
            "RELC_RELEVANCE2RELQ",
            comment_label,
            EXPECTED,
        )?;
        let mut text = None;
        self.children(&open, |p, child| {
            match child.start.name().as_ref() {
                "RelCText" => text = Some(p.text_of(&child)?),
                _ => p.skip_open(&child)?,
            }
            Ok(())
        })?;
        Ok(RelComment {
            text: self.present(&open, text, "RelCText")?,
            id,
            to_original,
            to_related,
            line: open.line,
        })
    }

    /// The element's attributes as (name, unescaped value); a malformed or repeated one is an
    /// error on the element's line.
    fn attributes(&self, open: &Open<'a>) -> Parsed<Vec<(String, String)>> {
        let mut out = Vec::new();
        for attribute in open.start.attributes() {
            let attribute = attribute.map_err(|e| {
                self.error(
                    open.line,
                    None,
                    format!("bad attribute in <{}>: {e}", name_of(&open.start)),
                )
            })?;
            let key = attribute.key.as_ref().to_string();
            let value = attribute
                .normalized_value(XmlVersion::Implicit1_0)
                .map_err(|e| self.error(open.line, Some(&key), format!("{e}")))?;
            out.push((key, value.into_owned()));
        }
        Ok(out)
    }

    fn required(&self, open: &Open<'a>, attrs: &[(String, String)], name: &str) -> Parsed<String> {
        match attr(attrs, name) {
            Some(v) if !v.trim().is_empty() => Ok(v.trim().to_string()),
            Some(_) => Err(self.error(open.line, Some(name), "is empty")),
            None => Err(self.error(
                open.line,
                Some(name),
                format!("missing from <{}>", name_of(&open.start)),
            )),
        }
    }

    /// A relevance label: `None` when absent or `N/A`, an error for any other unknown value.
    fn label<T>(
        &self,
        open: &Open<'a>,
        attrs: &[(String, String)],
        name: &str,
        parse: impl Fn(&str) -> Option<T>,
        expected: &str,
    ) -> Parsed<Option<T>> {
        match attr(attrs, name) {
            None => Ok(None),
            Some(v) if v.trim() == "N/A" => Ok(None),
            Some(v) => parse(v.trim()).map(Some).ok_or_else(|| {
                self.error(
                    open.line,
                    Some(name),
                    format!("expected {expected}, found {v:?}"),
                )
            }),
        }
    }

    fn present<T>(&self, open: &Open<'a>, value: Option<T>, child: &str) -> Parsed<T> {
        value.ok_or_else(|| {
            self.error(
                open.line,
                Some(child),
                format!("<{}> has no <{child}>", name_of(&open.start)),
            )
        })
    }

    /// Calls `each` for every child element of `open` until its end tag.
    fn children(
        &mut self,
        open: &Open<'a>,
        mut each: impl FnMut(&mut Self, Open<'a>) -> Parsed<()>,
    ) -> Parsed<()> {
        if open.empty {
            return Ok(());
        }
        loop {
            let (event, line) = self.next()?;
            match event {
                Event::Start(start) => each(
                    self,
                    Open {
                        start,
                        line,
                        empty: false,
                    },
                )?,
                Event::Empty(start) => each(
                    self,
                    Open {
                        start,
                        line,
                        empty: true,
                    },
                )?,
                Event::End(_) => return Ok(()),
                Event::Eof => {
                    return Err(self.error(
                        line,
                        None,
                        format!(
                            "the file ends inside <{}> of line {}",
                            name_of(&open.start),
                            open.line
                        ),
                    ))
                }
                Event::Text(t) if !t.trim().is_empty() => {
                    return Err(self.error(
                        line,
                        None,
                        format!("unexpected text inside <{}>", name_of(&open.start)),
                    ))
                }
                Event::CData(_) | Event::GeneralRef(_) => {
                    return Err(self.error(
                        line,
                        None,
                        format!("unexpected text inside <{}>", name_of(&open.start)),
                    ))
                }
                _ => {}
            }
        }
    }

    /// The text of a text-only element, entities resolved, trimmed.
    fn text_of(&mut self, open: &Open<'a>) -> Parsed<String> {
        let mut out = String::new();
        if open.empty {
            return Ok(out);
        }
        let field = name_of(&open.start);
        loop {
            let (event, line) = self.next()?;
            match event {
                Event::Text(t) => out.push_str(&t.xml10_content()),
                Event::CData(c) => out.push_str(&c),
                Event::GeneralRef(r) => {
                    let resolved = match r.resolve_char_ref() {
                        Ok(Some(c)) => c.to_string(),
                        Ok(None) => quick_xml::escape::resolve_predefined_entity(&r)
                            .ok_or_else(|| {
                                self.error(line, Some(&field), format!("unknown entity &{};", &*r))
                            })?
                            .to_string(),
                        Err(e) => return Err(self.error(line, Some(&field), format!("{e}"))),
                    };
                    out.push_str(&resolved);
                }
                Event::End(_) => return Ok(out.trim().to_string()),
                Event::Start(e) | Event::Empty(e) => {
                    return Err(self.error(
                        line,
                        Some(&field),
                        format!("unexpected element <{}> inside text", name_of(&e)),
                    ))
                }
                Event::Eof => {
                    return Err(self.error(
                        line,
                        Some(&field),
                        format!("the file ends inside <{field}> of line {}", open.line),
                    ))
                }
                _ => {}
            }
        }
    }

    fn skip_open(&mut self, open: &Open<'a>) -> Parsed<()> {
        if open.empty {
            return Ok(());
        }
        self.skip(&open.start, open.line)
    }

    /// Skips an element we do not read, children and all.
    fn skip(&mut self, start: &BytesStart<'a>, line: usize) -> Parsed<()> {
        let end = start.to_end().into_owned();
        self.reader
            .read_to_end(end.name())
            .map(|_| ())
            .map_err(|e| {
                let at = self.reader.error_position() as usize;
                let at_line = self.line_at(at);
                self.error(
                    at_line,
                    None,
                    format!("inside <{}> of line {line}: {e}", name_of(start)),
                )
            })
    }
}

fn name_of(start: &BytesStart<'_>) -> String {
    start.name().as_ref().to_string()
}

fn attr(attrs: &[(String, String)], name: &str) -> Option<String> {
    attrs
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::readers::testing::{assert_error_at, inputs, never_panics};

    const FIXTURE: &str = include_str!("../../tests/fixtures/semeval-mini.xml");

    fn file() -> CqaFile {
        parse_file(Path::new("mini.xml"), FIXTURE.as_bytes()).unwrap()
    }

    #[test]
    fn merges_repeated_original_questions_and_keeps_everything() {
        let f = file();
        assert_eq!(f.originals.len(), 2);
        let q1 = &f.originals[0];
        assert_eq!((q1.id.as_str(), q1.threads.len(), q1.line), ("Q1", 2, 9));
        assert_eq!(q1.threads[1].same_as.as_deref(), Some("Q0_R2"));
        let rel = &q1.threads[0].question;
        assert_eq!(rel.body, "Which bank is the best in Qatar & why?");
        assert_eq!(rel.ranking_order, Some(4));
        assert_eq!(rel.relevance, Some(QuestionRelevance::PerfectMatch));
        assert_eq!(rel.category.as_deref(), Some("Advice and Help"));
        let c2 = &q1.threads[0].comments[1];
        assert_eq!(c2.text, "it's QNB \u{263A}");
        assert_eq!(c2.to_original, Some(CommentRelevance::PotentiallyUseful));
        assert_eq!(c2.to_related, Some(CommentRelevance::Good));
        assert_eq!(q1.threads[1].question.body, "", "<RelQBody/> is empty");
        assert_eq!(q1.threads[1].comments[0].text, "Try the <Aspire> zone");
        assert!(f.loose_threads.is_empty());
    }

    #[test]
    fn task_a_is_each_unrepeated_thread_over_its_comments() {
        let qs = parse_a(Path::new("mini.xml"), FIXTURE.as_bytes()).unwrap();
        let ids: Vec<&str> = qs.iter().map(|q| q.id.as_str()).collect();
        assert_eq!(
            ids,
            ["Q1_R4", "Q2_R1"],
            "Q1_R9 repeats Q0_R2 and is skipped"
        );
        assert_eq!(
            qs[0].text,
            "Best bank. Which bank is the best in Qatar & why?"
        );
        // Good to the related question is positive; PotentiallyUseful is negative.
        assert_eq!(qs[0].labels(), [true, true, false]);
        assert_eq!(qs[1].labels(), [false]);
        let ctx = qs[0].candidates[1].context.as_ref().unwrap();
        assert_eq!((ctx.doc_id.as_str(), ctx.position), ("Q1_R4", 1));
        assert_eq!(ctx.prev.as_deref(), Some("Commercial bank"));
        assert_eq!(qs[0].candidates[2].id, "Q1_R4_C3");
    }

    #[test]
    fn task_b_is_each_original_question_over_its_related_questions() {
        let qs = parse_b(Path::new("mini.xml"), FIXTURE.as_bytes()).unwrap();
        assert_eq!(qs.len(), 2);
        assert_eq!(qs[0].id, "Q1");
        assert_eq!(qs[0].text, "Good bank. Which is a good bank in Doha?");
        let ids: Vec<&str> = qs[0].candidates.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["Q1_R4", "Q1_R9"]);
        assert_eq!(qs[0].candidates[1].text, "Gym");
        assert_eq!(qs[0].labels(), [true, false]);
        assert_eq!(qs[1].labels(), [true], "Relevant is positive");
        let positions: Vec<usize> = qs[0]
            .candidates
            .iter()
            .map(|c| c.context.as_ref().unwrap().position)
            .collect();
        assert_eq!(positions, [0, 1]);
    }

    #[test]
    fn task_c_is_each_original_question_over_all_its_comments_in_search_engine_order() {
        let qs = parse_c(Path::new("mini.xml"), FIXTURE.as_bytes()).unwrap();
        assert_eq!(qs[0].candidates.len(), 5);
        assert_eq!(qs[0].labels(), [true, false, false, false, true]);
        let positions: Vec<usize> = qs[0]
            .candidates
            .iter()
            .map(|c| c.context.as_ref().unwrap().position)
            .collect();
        assert_eq!(positions, [0, 1, 2, 3, 4]);
        assert_eq!(qs[0].candidates[4].id, "Q1_R9_C2");
        assert_eq!(qs[1].positives(), 0);
    }

    #[test]
    fn threads_are_placed_by_ranking_order_not_file_order() {
        let swapped = FIXTURE.replace("RELQ_RANKING_ORDER=\"4\"", "RELQ_RANKING_ORDER=\"40\"");
        let qs = parse_c(Path::new("s.xml"), swapped.as_bytes()).unwrap();
        let positions: Vec<usize> = qs[0]
            .candidates
            .iter()
            .map(|c| c.context.as_ref().unwrap().position)
            .collect();
        // Q1_R9 (rank 9, 2 comments) now comes first, Q1_R4 (rank 40) after it.
        assert_eq!(positions, [2, 3, 4, 0, 1]);
        // File order (SemEval's run order) is kept.
        assert_eq!(qs[0].candidates[0].id, "Q1_R4_C1");
    }

    #[test]
    fn a_subtask_a_file_of_loose_threads_reads_for_task_a_only() {
        let text = "<xml>\n<Thread THREAD_SEQUENCE=\"Q5_R1\">\n<RelQuestion RELQ_ID=\"Q5_R1\"><RelQSubject>s</RelQSubject><RelQBody>b</RelQBody></RelQuestion>\n<RelComment RELC_ID=\"Q5_R1_C1\" RELC_RELEVANCE2RELQ=\"Good\"><RelCText>t</RelCText></RelComment>\n</Thread>\n</xml>";
        let qs = parse_a(Path::new("a.xml"), text.as_bytes()).unwrap();
        assert_eq!((qs.len(), qs[0].positives()), (1, 1));
        let shown = assert_error_at(parse_b, text, 2, "OrgQuestion");
        assert!(shown.contains("threads only"), "{shown}");
    }

    #[test]
    fn errors_name_line_and_field() {
        let bad_label = FIXTURE.replace(
            "RELC_RELEVANCE2RELQ=\"Bad\"",
            "RELC_RELEVANCE2RELQ=\"Great\"",
        );
        let shown = assert_error_at(parse_a, &bad_label, 23, "RELC_RELEVANCE2RELQ");
        assert!(shown.contains("found \"Great\""), "{shown}");
        let no_id = FIXTURE.replace("RELQ_ID=\"Q2_R1\" ", "");
        assert_error_at(parse_b, &no_id, 50, "RELQ_ID");
        let rank = FIXTURE.replace("RELQ_RANKING_ORDER=\"9\"", "RELQ_RANKING_ORDER=\"nine\"");
        assert_error_at(parse_c, &rank, 33, "RELQ_RANKING_ORDER");
        let no_text = FIXTURE.replace("<RelCText>ask the PRO</RelCText>", "");
        assert_error_at(parse_c, &no_text, 54, "RelCText");
        let entity = FIXTURE.replace("&amp; why", "&nbsp; why");
        assert_error_at(parse_c, &entity, 15, "RelQBody");
        let differs = FIXTURE
            .replacen(
                "<OrgQSubject>Good bank</OrgQSubject>",
                "<OrgQSubject>Bad bank</OrgQSubject>",
                2,
            )
            .replacen(
                "<OrgQSubject>Bad bank</OrgQSubject>",
                "<OrgQSubject>Good bank</OrgQSubject>",
                1,
            );
        assert_error_at(parse_b, &differs, 29, "OrgQSubject");
    }

    #[test]
    fn a_missing_task_label_is_an_error_for_that_task_only() {
        // The v2.0 train part 1 has RELC_RELEVANCE2RELQ="N/A" everywhere: no task A.
        let na = FIXTURE.replace(
            "RELC_RELEVANCE2RELQ=\"Good\"",
            "RELC_RELEVANCE2RELQ=\"N/A\"",
        );
        let shown = assert_error_at(parse_a, &na, 17, "RELC_RELEVANCE2RELQ");
        assert!(shown.contains("no task A label"), "{shown}");
        assert!(parse_b(Path::new("x"), na.as_bytes()).is_ok());
        assert!(parse_c(Path::new("x"), na.as_bytes()).is_ok());
    }

    #[test]
    fn broken_xml_is_an_error_with_its_line() {
        let unclosed = FIXTURE.replace(
            "</RelQSubject>\n\t\t\t<RelQBody>How many",
            "\n\t\t\t<RelQBody>How many",
        );
        let err = parse_b(Path::new("u.xml"), unclosed.as_bytes()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "u.xml:52: field `RelQSubject`: unexpected element <RelQBody> inside text"
        );
        let mismatched = FIXTURE.replace("ask the PRO</RelCText>", "ask the PRO</RelQText>");
        let err = parse_b(Path::new("m.xml"), mismatched.as_bytes()).unwrap_err();
        let shown = err.to_string();
        assert!(
            shown.starts_with("m.xml:55: not well-formed XML"),
            "{shown}"
        );
        let truncated = &FIXTURE[..FIXTURE.find("<OrgQuestion ORGQ_ID=\"Q2\">").unwrap()];
        let err = parse_b(Path::new("t.xml"), truncated.as_bytes()).unwrap_err();
        assert!(
            err.to_string().contains("the file ends inside <xml>"),
            "{err}"
        );
        let err = parse_b(Path::new("bin.xml"), b"<xml>\n\xff</xml>").unwrap_err();
        assert_eq!(
            err.to_string(),
            "bin.xml:2: invalid UTF-8: invalid utf-8 sequence of 1 bytes from index 6"
        );
        assert!(parse_b(Path::new("e.xml"), b"").unwrap().is_empty());
    }

    #[test]
    fn split_by_original_question_is_seeded_and_whole() {
        let mut f = file();
        for i in 3..=20 {
            let mut org = f.originals[1].clone();
            org.id = format!("Q{i}");
            f.originals.push(org);
        }
        let (train, tune) = f.split_originals(0.25, 7);
        assert_eq!((train.originals.len(), tune.originals.len()), (15, 5));
        // Every original question lands in one part, whole, and each part keeps file order.
        let ids = |c: &CqaFile| c.originals.iter().map(|o| o.id.clone()).collect::<Vec<_>>();
        let mut all = [ids(&train), ids(&tune)].concat();
        all.sort();
        let mut expected = ids(&f);
        expected.sort();
        assert_eq!(all, expected);
        let position = |id: &String| f.originals.iter().position(|o| &o.id == id).unwrap();
        assert!(ids(&tune)
            .windows(2)
            .all(|w| position(&w[0]) < position(&w[1])));
        let q1 = train
            .originals
            .iter()
            .chain(&tune.originals)
            .find(|o| o.id == "Q1")
            .unwrap();
        assert_eq!(q1.threads.len(), 2);
        // Seeded: the same seed splits the same way, another seed (here) differently.
        assert_eq!(ids(&f.split_originals(0.25, 7).1), ids(&tune));
        assert_ne!(ids(&f.split_originals(0.25, 8).1), ids(&tune));
        let (_, none) = f.split_originals(0.0, 7);
        assert!(none.originals.is_empty());
        // Four folds of one seed: near-equal, disjoint, together every original question; the
        // first is the 0.25 split's held part.
        let folds: Vec<Vec<String>> = (0..4)
            .map(|k| ids(&f.split_originals_fold(k, 4, 7).1))
            .collect();
        assert_eq!(folds.iter().map(Vec::len).collect::<Vec<_>>(), [5, 5, 5, 5]);
        assert_eq!(folds[0], ids(&tune));
        let mut joined = folds.concat();
        joined.sort();
        assert_eq!(joined, expected);
        let (kept, held) = f.split_originals_fold(2, 4, 7);
        assert_eq!(kept.originals.len() + held.originals.len(), 20);
        assert_eq!(ids(&f.split_originals_fold(2, 3, 7).1).len(), 7);
    }

    #[test]
    fn subject_and_body_join_into_one_text() {
        assert_eq!(join_subject_body("Visa", "How long?"), "Visa. How long?");
        assert_eq!(join_subject_body("Visa?", "How long?"), "Visa? How long?");
        assert_eq!(join_subject_body(" Visa ", ""), "Visa");
        assert_eq!(join_subject_body("", "Body"), "Body");
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in inputs(FIXTURE)) {
            for parse in [parse_a, parse_b, parse_c] {
                never_panics(parse, &bytes);
            }
        }
    }
}
