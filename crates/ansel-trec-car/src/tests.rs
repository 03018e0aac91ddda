use super::*;
use minicbor::Encoder;
use std::path::PathBuf;

/// A paragraph record as TREC CAR v1.5 writes it (indefinite body list).
fn paragraph_bytes(e: &mut Encoder<&mut Vec<u8>>, id: &str, text: &str, anchor: &str) {
    e.array(3)
        .unwrap()
        .u8(0)
        .unwrap()
        .bytes(id.as_bytes())
        .unwrap();
    e.begin_array().unwrap();
    e.array(2).unwrap().u8(0).unwrap().str(text).unwrap();
    e.array(2).unwrap().u8(1).unwrap();
    e.array(5)
        .unwrap()
        .u8(0)
        .unwrap()
        .str("Target page")
        .unwrap();
    e.array(0).unwrap();
    e.bytes(b"Target%20page").unwrap().str(anchor).unwrap();
    e.end().unwrap();
}

fn outline_bytes(e: &mut Encoder<&mut Vec<u8>>) {
    e.array(4)
        .unwrap()
        .u8(0)
        .unwrap()
        .str("Sea turtle")
        .unwrap();
    e.bytes(b"Sea%20turtle").unwrap();
    e.begin_array().unwrap();
    e.array(4).unwrap().u8(0).unwrap().str("Anatomy").unwrap();
    e.bytes(b"Anatomy").unwrap();
    e.begin_array().unwrap();
    e.array(4).unwrap().u8(0).unwrap().str("Shell").unwrap();
    e.bytes(b"Shell").unwrap().array(0).unwrap();
    e.array(2).unwrap().u8(1).unwrap();
    paragraph_bytes(e, "p9", "Inline ", "para");
    e.end().unwrap();
    e.array(3)
        .unwrap()
        .u8(2)
        .unwrap()
        .str("img.png")
        .unwrap()
        .array(0)
        .unwrap();
    e.end().unwrap();
}

fn synthetic_paragraphs() -> Vec<u8> {
    let mut buf = Vec::new();
    let mut e = Encoder::new(&mut buf);
    paragraph_bytes(&mut e, "p1", "Sea turtles have a ", "shell");
    paragraph_bytes(&mut e, "p2", "Turtle ships were ", "Korean");
    buf
}

fn synthetic_outline() -> Vec<u8> {
    let mut buf = Vec::new();
    outline_bytes(&mut Encoder::new(&mut buf));
    buf
}

fn write(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn reads_paragraphs_and_outline_queries() {
    let dir = tempfile::tempdir().unwrap();
    let paras = load_paragraphs(&write(&dir, "p.cbor", &synthetic_paragraphs())).unwrap();
    assert_eq!(paras.len(), 2);
    assert_eq!(paras[0].id, "p1");
    assert_eq!(paras[0].text(), "Sea turtles have a shell");
    assert!(matches!(&paras[1].bodies[1], ParaBody::Link { page, .. } if page == "Target page"));
    let queries = load_queries(&write(&dir, "o.cbor", &synthetic_outline())).unwrap();
    let ids: Vec<&str> = queries.iter().map(|q| q.id.as_str()).collect();
    assert_eq!(ids, ["Sea%20turtle/Anatomy", "Sea%20turtle/Anatomy/Shell"]);
    assert_eq!(queries[1].text(), "Sea turtle Anatomy Shell");
    let page = read_pages(&dir.path().join("o.cbor"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let Skeleton::Section { children, .. } = &page.skeleton[0] else {
        panic!("{page:?}")
    };
    assert!(matches!(&children[1], Skeleton::Para(p) if p.id == "p9"));
    assert_eq!(page.skeleton[1], Skeleton::Other(2));
}

#[test]
fn errors_name_file_record_offset_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = synthetic_paragraphs();
    let first_len = {
        let mut d = minicbor::Decoder::new(&bytes);
        d.skip().unwrap();
        d.position()
    };
    // Second record: its id as a text string instead of bytes.
    let mut e = Encoder::new(&mut bytes);
    e.array(3)
        .unwrap()
        .u8(0)
        .unwrap()
        .str("p3")
        .unwrap()
        .array(0)
        .unwrap();
    let path = write(&dir, "bad.cbor", &bytes[..]);
    let mut records = read_paragraphs(&path).unwrap();
    assert!(records.next().unwrap().is_ok());
    assert!(records.next().unwrap().is_ok());
    let msg = records.next().unwrap().unwrap_err().to_string();
    assert!(msg.contains("bad.cbor: record 2 (byte "), "{msg}");
    assert!(msg.contains("field `paragraph.id`"), "{msg}");
    assert!(records.next().is_none(), "iteration stops after an error");
    // Truncated inside the first record.
    let path = write(&dir, "cut.cbor", &synthetic_paragraphs()[..first_len - 3]);
    let msg = load_paragraphs(&path).unwrap_err().to_string();
    assert!(
        msg.contains("cut.cbor: record 0 (byte 0): field `record`: truncated"),
        "{msg}"
    );
    // A nested field deep in an outline.
    let mut outline = synthetic_outline();
    let at = outline.windows(6).position(|w| w == b"\x45Shell").unwrap();
    outline[at] = 0x65; // heading id b"Shell" (bytes, 0x45) becomes text (0x65)
    let msg = load_queries(&write(&dir, "o.cbor", &outline))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("o.cbor: record 0 (byte 0): field `page.skeleton[0].children[0].heading_id`: unexpected type string"), "{msg}");
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let mut buf = Vec::new();
    let mut e = Encoder::new(&mut buf);
    e.array(4)
        .unwrap()
        .u8(0)
        .unwrap()
        .str("T")
        .unwrap()
        .bytes(b"T")
        .unwrap();
    for _ in 0..10_000 {
        e.array(1)
            .unwrap()
            .array(4)
            .unwrap()
            .u8(0)
            .unwrap()
            .str("h")
            .unwrap();
        e.bytes(b"h").unwrap();
    }
    e.array(0).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let msg = load_queries(&write(&dir, "deep.cbor", &buf))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("nested deeper than 64"), "{msg}");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]
    #[test]
    fn no_panic_on_random_or_truncated_bytes(
        random in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400),
        cut in 0usize..2000,
        flip in 0usize..2000,
        byte in proptest::prelude::any::<u8>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let mut inputs = vec![random];
        for good in [synthetic_paragraphs(), synthetic_outline()] {
            inputs.push(good[..cut.min(good.len())].to_vec());
            let mut mutated = good.clone();
            let i = flip % mutated.len();
            mutated[i] = byte;
            inputs.push(mutated);
        }
        for bytes in inputs {
            let path = write(&dir, "x.cbor", &bytes);
            for r in read_paragraphs(&path).unwrap() { let _ = r.map(|p| p.text()); }
            for r in read_pages(&path).unwrap() { let _ = r.map(|p| outline_queries(&p)); }
        }
    }
}

fn data() -> Option<PathBuf> {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/trec-car/test200-v1.5");
    dir.is_dir().then_some(dir)
}

#[test]
fn reads_the_test200_files() {
    let Some(dir) = data() else { return };
    let paras = load_paragraphs(&dir.join("train.test200.cbor.paragraphs")).unwrap();
    assert_eq!(paras.len(), 4689);
    let queries = load_queries(&dir.join("train.test200.cbor.outlines")).unwrap();
    assert_eq!(queries.len(), 1987);
    let pages: std::collections::BTreeSet<&str> =
        queries.iter().map(|q| q.page_id.as_str()).collect();
    assert_eq!(pages.len(), 198);
    let qrels = ansel_eval::read_qrels(&dir.join("train.test200.cbor.hierarchical.qrels")).unwrap();
    let ids: std::collections::BTreeSet<&str> = queries.iter().map(|q| q.id.as_str()).collect();
    assert!(qrels.keys().all(|q| ids.contains(q.as_str())));
    let full: Vec<Page> = read_pages(&dir.join("train.test200.cbor"))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(full.len(), 198);
}

#[test]
fn bm25_ranks_the_matching_paragraph_first() {
    let dir = tempfile::tempdir().unwrap();
    let paras = load_paragraphs(&write(&dir, "p.cbor", &synthetic_paragraphs())).unwrap();
    let index = ParagraphIndex::build(&paras).unwrap();
    let hits = index.search("Korean turtle ships", 10).unwrap();
    assert_eq!(hits[0].0, "p2");
    assert!(index.search("", 10).unwrap().is_empty());
    assert_eq!(index.terms("Turtles' SHELLS"), ["turtl", "shell"]);
}

#[test]
fn folds_split_articles_evenly_and_runs_sort_as_trec_eval() {
    let ids = ["a", "b", "c", "d", "e", "f", "g", "a"];
    let folds = article_folds(ids, 3, 7);
    assert_eq!(folds.len(), 7);
    let mut sizes = [0; 3];
    folds.values().for_each(|&f| sizes[f] += 1);
    assert!(sizes.iter().all(|&s| (2..=3).contains(&s)), "{sizes:?}");
    assert_eq!(folds, article_folds(ids, 3, 7));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.run.gz");
    let run = vec![(
        "q".to_string(),
        vec![("x".into(), 1.0), ("y".into(), 1.0), ("z".into(), 2.5)],
    )];
    write_run_gz(&path, &run, "t", 2).unwrap();
    let mut text = String::new();
    use std::io::Read;
    flate2::read::GzDecoder::new(std::fs::File::open(&path).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    assert_eq!(text, "q Q0 z 1 2.5 t\nq Q0 y 2 1 t\n");
    // Rewritten in place: the new run replaces the old whole, with no temporary left beside it.
    write_run_gz(&path, &run, "t", 1).unwrap();
    text.clear();
    flate2::read::GzDecoder::new(std::fs::File::open(&path).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    assert_eq!(text, "q Q0 z 1 2.5 t\n");
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["r.run.gz"]);
}
