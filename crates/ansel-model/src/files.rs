use crate::{ModelError, Result};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes a file atomically: a temporary file in the same directory, synced,
/// then renamed over `path`, so readers see the old or the new file, never half.
/// A `path` that exists and is not a regular file (`/dev/null`, `/dev/stdout`, a pipe)
/// is written in place instead: renaming over it would replace the device itself.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Ok(meta) = fs::metadata(path) {
        if !meta.is_file() {
            return fs::OpenOptions::new()
                .write(true)
                .open(path)
                .and_then(|mut f| f.write_all(bytes))
                .map_err(|e| ModelError::io(path, e));
        }
    }
    let dir = parent_dir(path);
    fs::create_dir_all(dir).map_err(|e| ModelError::io(dir, e))?;
    let (tmp, mut file) = create_unique(dir, ".write")?;
    let result = file
        .write_all(bytes)
        .and_then(|_| file.sync_all())
        .and_then(|_| fs::rename(&tmp, path));
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(ModelError::io(path, e));
    }
    sync_dir(dir);
    Ok(())
}

/// Writes questions as ansel JSON lines, atomically (see [`write_atomic`]); gzipped when `path`
/// ends in `.gz`, as the readers expect.
pub fn write_questions(path: &Path, questions: &[ansel_data::Question]) -> Result<()> {
    let mut bytes = Vec::new();
    ansel_data::readers::jsonl::write(&mut bytes, questions)
        .map_err(|e| ModelError::io(path, e))?;
    if path.extension().is_some_and(|e| e == "gz") {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        bytes = gz
            .write_all(&bytes)
            .and_then(|_| gz.finish())
            .map_err(|e| ModelError::io(path, e))?;
    }
    write_atomic(path, &bytes)
}

/// Builds a directory with `fill` in a temporary sibling, then swaps it in
/// place of `dest`. A crash at any point leaves either the old or the new
/// directory complete under `dest` (or, between the two renames, the old one
/// under `dest.old`, which the next call cleans up).
pub fn replace_dir(dest: &Path, fill: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
    let parent = parent_dir(dest);
    fs::create_dir_all(parent).map_err(|e| ModelError::io(parent, e))?;
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "model".into());
    let staging = parent.join(format!(".{name}.staging-{}", std::process::id()));
    let _ = fs::remove_dir_all(&staging);
    fs::create_dir_all(&staging).map_err(|e| ModelError::io(&staging, e))?;
    if let Err(e) = fill(&staging) {
        let _ = fs::remove_dir_all(&staging);
        return Err(e);
    }
    let old = parent.join(format!(".{name}.old"));
    let _ = fs::remove_dir_all(&old);
    if dest.exists() {
        fs::rename(dest, &old).map_err(|e| ModelError::io(dest, e))?;
    }
    fs::rename(&staging, dest).map_err(|e| ModelError::io(dest, e))?;
    sync_dir(parent);
    let _ = fs::remove_dir_all(&old);
    Ok(())
}

fn parent_dir(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

fn create_unique(dir: &Path, tag: &str) -> Result<(PathBuf, fs::File)> {
    for attempt in 0..1000u32 {
        let path = dir.join(format!(".ansel{tag}-{}-{attempt}.tmp", std::process::id()));
        match fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(file) => return Ok((path, file)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(ModelError::io(dir, e)),
        }
    }
    Err(ModelError::io(
        dir,
        std::io::Error::other("no free temporary file name"),
    ))
}

/// Makes a rename durable; best effort, as not every file system supports it.
fn sync_dir(dir: &Path) {
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn write_atomic_writes_into_a_special_file_instead_of_replacing_it() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success(), "mkfifo");
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || fs::read_to_string(fifo))
        };
        write_atomic(&fifo, b"through the pipe").unwrap();
        assert!(
            fs::metadata(&fifo).unwrap().file_type().is_fifo(),
            "still a pipe"
        );
        assert_eq!(reader.join().unwrap().unwrap(), "through the pipe");
        // A directory is an error naming it, and stays a directory.
        let err = write_atomic(dir.path(), b"x").unwrap_err().to_string();
        assert!(err.contains(&dir.path().display().to_string()), "{err}");
        assert!(dir.path().is_dir());
    }

    #[test]
    fn write_atomic_replaces_content_and_leaves_no_temporaries() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/x.json");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        assert_eq!(fs::read_dir(path.parent().unwrap()).unwrap().count(), 1);
    }

    #[test]
    fn write_questions_gzips_a_gz_path_and_the_readers_read_both_back() {
        let dir = tempfile::tempdir().unwrap();
        let question = ansel_data::Question {
            id: "q1".into(),
            text: "Who wrote Hamlet?".into(),
            candidates: vec![ansel_data::Candidate {
                id: "c1".into(),
                text: "Shakespeare wrote Hamlet.".into(),
                label: Some(true),
                context: None,
            }],
        };
        for name in ["q.jsonl", "q.jsonl.gz"] {
            let path = dir.path().join(name);
            write_questions(&path, std::slice::from_ref(&question)).unwrap();
            let gzipped = fs::read(&path).unwrap().starts_with(&[0x1f, 0x8b]);
            assert_eq!(gzipped, name.ends_with(".gz"), "{name}");
            assert_eq!(
                ansel_data::read_path(&path, None).unwrap(),
                vec![question.clone()]
            );
        }
    }

    #[test]
    fn replace_dir_keeps_the_old_directory_when_filling_fails() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("model");
        replace_dir(&dest, |d| write_atomic(&d.join("w"), b"v1")).unwrap();
        let failed = replace_dir(&dest, |d| {
            write_atomic(&d.join("w"), b"v2")?;
            Err(ModelError::Backend("disk full".into()))
        });
        assert!(failed.is_err());
        assert_eq!(fs::read(dest.join("w")).unwrap(), b"v1");
        replace_dir(&dest, |d| write_atomic(&d.join("w"), b"v3")).unwrap();
        assert_eq!(fs::read(dest.join("w")).unwrap(), b"v3");
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no staging or .old left"
        );
    }
}
