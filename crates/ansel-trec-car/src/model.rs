//! TREC CAR records and the outline queries built from them.

/// A Wikipedia paragraph: its id and its text, split into plain runs and links.
#[derive(Debug, Clone, PartialEq)]
pub struct Paragraph {
    pub id: String,
    pub bodies: Vec<ParaBody>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ParaBody {
    Text(String),
    Link {
        anchor: String,
        page: String,
        section: Option<String>,
        target_id: String,
    },
}

impl Paragraph {
    /// The paragraph's text: plain runs and link anchors, in order.
    pub fn text(&self) -> String {
        self.bodies
            .iter()
            .map(|b| match b {
                ParaBody::Text(t) => t.as_str(),
                ParaBody::Link { anchor, .. } => anchor.as_str(),
            })
            .collect()
    }
}

/// A page (article): the outline files hold sections only, the full page file also paragraphs.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    pub name: String,
    pub id: String,
    pub skeleton: Vec<Skeleton>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Skeleton {
    Section {
        heading: String,
        heading_id: String,
        children: Vec<Skeleton>,
    },
    Para(Paragraph),
    List {
        level: u64,
        body: Paragraph,
    },
    /// An element this reader does not use (image, infobox, ...), by its CBOR tag.
    Other(u64),
}

/// What part of a heading path a word comes from: the one-hot the similarity module of STNet
/// concatenates to each query word (section heading, intermediate heading, article title).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HeadingKind {
    /// The last (deepest) heading of the path: the section the query asks about.
    Section = 0,
    /// Headings between the title and the section.
    Intermediate = 1,
    /// The article title.
    Title = 2,
}

impl HeadingKind {
    pub const COUNT: usize = 3;
    pub fn one_hot(self) -> [f32; 3] {
        let mut v = [0.0; 3];
        v[self as usize] = 1.0;
        v
    }
}

/// One query of an outline: the article title and the heading path to a section (the paper's
/// formulation, "Analytics/Applications of analytics/Digital analytics").
#[derive(Debug, Clone, PartialEq)]
pub struct OutlineQuery {
    /// The trec_eval query id: page id and heading ids joined by `/`, as in the qrels.
    pub id: String,
    /// The page id (the article; folds split on it).
    pub page_id: String,
    pub title: String,
    /// Headings from the top-level section down to the section asked about.
    pub headings: Vec<String>,
}

impl OutlineQuery {
    /// Title and headings joined by spaces: the BM25 query text.
    pub fn text(&self) -> String {
        std::iter::once(self.title.as_str())
            .chain(self.headings.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Each part of the path with its kind: title, intermediate headings, section heading.
    pub fn parts(&self) -> Vec<(HeadingKind, &str)> {
        let mut out = vec![(HeadingKind::Title, self.title.as_str())];
        let last = self.headings.len().saturating_sub(1);
        for (i, h) in self.headings.iter().enumerate() {
            let kind = if i == last {
                HeadingKind::Section
            } else {
                HeadingKind::Intermediate
            };
            out.push((kind, h.as_str()));
        }
        out
    }

    /// Lower-cased word tokens of the path, each with its heading kind.
    pub fn typed_tokens(&self) -> Vec<(HeadingKind, String)> {
        self.parts()
            .into_iter()
            .flat_map(|(kind, text)| tokens(text).into_iter().map(move |t| (kind, t)))
            .collect()
    }
}

/// Every section of a page as a query, depth first (top-level sections and their subsections).
pub fn outline_queries(page: &Page) -> Vec<OutlineQuery> {
    fn walk(
        page: &Page,
        nodes: &[Skeleton],
        headings: &mut Vec<String>,
        ids: &mut Vec<String>,
        out: &mut Vec<OutlineQuery>,
    ) {
        for node in nodes {
            if let Skeleton::Section {
                heading,
                heading_id,
                children,
            } = node
            {
                headings.push(heading.clone());
                ids.push(heading_id.clone());
                out.push(OutlineQuery {
                    id: format!("{}/{}", page.id, ids.join("/")),
                    page_id: page.id.clone(),
                    title: page.name.clone(),
                    headings: headings.clone(),
                });
                walk(page, children, headings, ids, out);
                headings.pop();
                ids.pop();
            }
        }
    }
    let mut out = Vec::new();
    walk(
        page,
        &page.skeleton,
        &mut Vec::new(),
        &mut Vec::new(),
        &mut out,
    );
    out
}

/// Lower-cased alphanumeric word tokens (the neural models' tokenizer; BM25 uses tantivy's).
pub fn tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(h: &str, children: Vec<Skeleton>) -> Skeleton {
        Skeleton::Section {
            heading: h.into(),
            heading_id: h.replace(' ', "%20"),
            children,
        }
    }

    #[test]
    fn queries_follow_the_heading_path() {
        let page = Page {
            name: "Analytics".into(),
            id: "Analytics".into(),
            skeleton: vec![
                section("Challenges", vec![]),
                section(
                    "Applications of analytics",
                    vec![section("Digital analytics", vec![])],
                ),
            ],
        };
        let qs = outline_queries(&page);
        let ids: Vec<&str> = qs.iter().map(|q| q.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "Analytics/Challenges",
                "Analytics/Applications%20of%20analytics",
                "Analytics/Applications%20of%20analytics/Digital%20analytics"
            ]
        );
        assert_eq!(
            qs[2].text(),
            "Analytics Applications of analytics Digital analytics"
        );
        let kinds: Vec<HeadingKind> = qs[2].typed_tokens().iter().map(|t| t.0).collect();
        use HeadingKind::*;
        assert_eq!(
            kinds,
            [
                Title,
                Intermediate,
                Intermediate,
                Intermediate,
                Section,
                Section
            ]
        );
        assert_eq!(Title.one_hot(), [0.0, 0.0, 1.0]);
    }
}
