//! One fuzz input: one file (the common case) or a few files that are read together
//! (a rocprofv3 CSV set), and its on-disk form.
//!
//! A single-file input is saved as its bytes, its file name in the `.txt` note next to it.
//! A multi-file input is saved as a small bundle: the line `ROCPD-FUZZ-BUNDLE 1`, then per
//! file a line with the name, a line with the length in bytes, the bytes and a newline.

/// A named file of an input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InFile {
    /// The file name the reader sees (no directory).
    pub name: String,
    /// The content.
    pub data: Vec<u8>,
}

/// The files of one input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    /// At least one file.
    pub files: Vec<InFile>,
}

const MAGIC: &[u8] = b"ROCPD-FUZZ-BUNDLE 1\n";

impl Input {
    /// A one-file input.
    pub fn single(name: impl Into<String>, data: Vec<u8>) -> Input {
        Input {
            files: vec![InFile {
                name: name.into(),
                data,
            }],
        }
    }

    /// Total bytes over all files.
    pub fn len(&self) -> usize {
        self.files.iter().map(|f| f.data.len()).sum()
    }

    /// The bytes to save: the file itself, or a bundle of several.
    pub fn encode(&self) -> Vec<u8> {
        if self.files.len() == 1 {
            return self.files[0].data.clone();
        }
        let mut out = MAGIC.to_vec();
        for f in &self.files {
            out.extend_from_slice(f.name.as_bytes());
            out.push(b'\n');
            out.extend_from_slice(f.data.len().to_string().as_bytes());
            out.push(b'\n');
            out.extend_from_slice(&f.data);
            out.push(b'\n');
        }
        out
    }

    /// Reads a saved input: a bundle, or one file called `name`.
    pub fn decode(bytes: Vec<u8>, name: &str) -> Result<Input, String> {
        let Some(mut rest) = bytes.strip_prefix(MAGIC) else {
            return Ok(Input::single(name, bytes));
        };
        let mut files = Vec::new();
        let line = |rest: &mut &[u8]| -> Result<String, String> {
            let end = rest
                .iter()
                .position(|&c| c == b'\n')
                .ok_or("bundle: missing line end")?;
            let s = String::from_utf8_lossy(&rest[..end]).into_owned();
            *rest = &rest[end + 1..];
            Ok(s)
        };
        while !rest.is_empty() {
            let name = line(&mut rest)?;
            if name.is_empty() || name.contains('/') || name == ".." {
                return Err(format!("bundle: bad file name {name:?}"));
            }
            let len: usize = line(&mut rest)?
                .parse()
                .map_err(|e| format!("bundle: bad length: {e}"))?;
            if rest.len() < len + 1 {
                return Err("bundle: truncated".into());
            }
            files.push(InFile {
                name,
                data: rest[..len].to_vec(),
            });
            rest = &rest[len + 1..];
        }
        if files.is_empty() {
            return Err("bundle: no files".into());
        }
        Ok(Input { files })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundles_round_trip() {
        let one = Input::single("a.csv", b"x\ny".to_vec());
        assert_eq!(Input::decode(one.encode(), "a.csv").unwrap(), one);
        let two = Input {
            files: vec![
                InFile {
                    name: "1_kernel_trace.csv".into(),
                    data: b"a\n\nb".to_vec(),
                },
                InFile {
                    name: "1_hip_api_trace.csv".into(),
                    data: Vec::new(),
                },
            ],
        };
        assert_eq!(Input::decode(two.encode(), "ignored").unwrap(), two);
    }
}
