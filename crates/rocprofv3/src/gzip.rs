//! Gzip input as `gzip -d` reads it: one member or several concatenated (what `gzip`
//! and `cat a.gz b.gz` write), and zero bytes after the last member ignored (what tape
//! and block devices pad a file with). Anything else after a member is an error: data
//! that is not gzip would otherwise be dropped without a word.

use std::io::{BufRead, Read};

use flate2::bufread::GzDecoder;

/// The decompressed text of a gzip stream read from `R`.
pub(crate) struct GzMembers<R: BufRead> {
    /// The member being read; `None` once the stream has ended.
    member: Option<GzDecoder<R>>,
}

impl<R: BufRead> GzMembers<R> {
    pub(crate) fn new(input: R) -> Self {
        GzMembers {
            member: Some(GzDecoder::new(input)),
        }
    }
}

/// What follows a member: another one, the end (or only zero bytes), or anything else.
fn after_member<R: BufRead>(input: &mut R) -> std::io::Result<Option<()>> {
    let mut zeros = false;
    loop {
        let buf = input.fill_buf()?;
        if buf.is_empty() {
            return Ok(None);
        }
        if !zeros && buf[0] == 0x1f {
            return Ok(Some(()));
        }
        match buf.iter().position(|&b| b != 0) {
            None => {
                zeros = true;
                let n = buf.len();
                input.consume(n);
            }
            Some(_) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "bytes after the gzip data that are neither a gzip member nor zero padding to the end",
                ))
            }
        }
    }
}

impl<R: BufRead> Read for GzMembers<R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while let Some(member) = self.member.as_mut() {
            let n = member.read(out)?;
            if n > 0 || out.is_empty() {
                return Ok(n);
            }
            // The member ended: read on into the next one, if one follows.
            let Some(done) = self.member.take() else {
                break;
            };
            let mut input = done.into_inner();
            if after_member(&mut input)?.is_some() {
                self.member = Some(GzDecoder::new(input));
            }
        }
        Ok(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gz(text: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(text).unwrap();
        e.finish().unwrap()
    }

    fn read(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
        let mut out = Vec::new();
        GzMembers::new(std::io::BufReader::with_capacity(7, bytes)).read_to_end(&mut out)?;
        Ok(out)
    }

    #[test]
    fn members_are_joined_and_zero_padding_is_ignored() {
        let mut two = gz(b"one,");
        two.extend(gz(b"two"));
        assert_eq!(read(&two).unwrap(), b"one,two");
        let mut padded = two.clone();
        padded.extend([0u8; 1000]);
        assert_eq!(read(&padded).unwrap(), b"one,two");
        // Anything else after a member is an error, not dropped.
        let mut junk = two.clone();
        junk.extend(b"\0\0x");
        let e = read(&junk).unwrap_err().to_string();
        assert!(e.contains("neither a gzip member nor zero padding"), "{e}");
        // A member cut short stays an error.
        let cut = &two[..two.len() - 3];
        assert!(read(cut).is_err());
        // Zero bytes, then a member: not padding (gzip would refuse it too).
        let mut late = gz(b"a");
        late.extend([0u8; 4]);
        late.extend(gz(b"b"));
        assert!(read(&late).is_err());
    }
}
