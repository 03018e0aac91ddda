//! BM25 (tantivy, English stemming, k1 = 1.2, b = 0.75) over a paragraph collection.

use crate::Paragraph;
use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, Value, STORED, STRING,
};
use tantivy::tokenizer::TokenStream;
use tantivy::{Index, IndexReader, TantivyDocument, Term};

/// An in-memory tantivy index of paragraphs.
pub struct ParagraphIndex {
    index: Index,
    reader: IndexReader,
    id: Field,
    text: Field,
}

impl ParagraphIndex {
    pub fn build(paragraphs: &[Paragraph]) -> tantivy::Result<ParagraphIndex> {
        let mut builder = Schema::builder();
        let id = builder.add_text_field("id", STRING | STORED);
        let text = builder.add_text_field(
            "text",
            TextOptions::default().set_indexing_options(
                TextFieldIndexing::default()
                    .set_tokenizer("en_stem")
                    .set_index_option(IndexRecordOption::WithFreqs),
            ),
        );
        let index = Index::create_in_ram(builder.build());
        let mut writer = index.writer_with_num_threads(1, 30_000_000)?;
        for p in paragraphs {
            let mut doc = TantivyDocument::default();
            doc.add_text(id, &p.id);
            doc.add_text(text, p.text());
            writer.add_document(doc)?;
        }
        writer.commit()?;
        let reader = index.reader()?;
        Ok(ParagraphIndex {
            index,
            reader,
            id,
            text,
        })
    }

    /// The analysed (lower-cased, stemmed) terms of `query`, repeats kept: a word twice in a
    /// heading path weighs twice.
    pub fn terms(&self, query: &str) -> Vec<String> {
        let mut tokenizer = self
            .index
            .tokenizers()
            .get("en_stem")
            .expect("tantivy registers en_stem");
        let mut stream = tokenizer.token_stream(query);
        let mut out = Vec::new();
        while stream.advance() {
            out.push(stream.token().text.clone());
        }
        out
    }

    /// The `limit` best paragraphs for `query` by BM25, best first.
    pub fn search(&self, query: &str, limit: usize) -> tantivy::Result<Vec<(String, f64)>> {
        let clauses: Vec<(Occur, Box<dyn Query>)> = self
            .terms(query)
            .into_iter()
            .map(|t| {
                let q: Box<dyn Query> = Box::new(TermQuery::new(
                    Term::from_field_text(self.text, &t),
                    IndexRecordOption::WithFreqs,
                ));
                (Occur::Should, q)
            })
            .collect();
        if clauses.is_empty() {
            return Ok(Vec::new());
        }
        let searcher = self.reader.searcher();
        let top = searcher.search(
            &BooleanQuery::new(clauses),
            &TopDocs::with_limit(limit).order_by_score(),
        )?;
        top.into_iter()
            .map(|(score, addr)| {
                let doc: TantivyDocument = searcher.doc(addr)?;
                let id = doc
                    .get_first(self.id)
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
                    .to_string();
                Ok((id, f64::from(score)))
            })
            .collect()
    }
}
