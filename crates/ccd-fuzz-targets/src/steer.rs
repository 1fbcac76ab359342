//! How the first bytes of an input steer a target.

/// A cursor over an input's leading control bytes.
///
/// Targets read a few control bytes first (a size, a limit, chunk lengths),
/// then treat the rest as the payload. Every read past the end yields 0, so
/// every input, even the empty one, is valid.
///
/// Chunk lengths ([`Steer::chunk_lens`]): one byte `n`, then `n % 8` bytes,
/// each a chunk length of `byte + 1` (1..=256). The payload is cut into
/// chunks of those lengths, cycling; with no lengths it is one chunk.
#[derive(Debug, Clone)]
pub struct Steer<'a> {
    data: &'a [u8],
}

impl<'a> Steer<'a> {
    /// A cursor at the start of `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Self { data }
    }

    /// The next control byte (0 past the end).
    pub fn byte(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }

    /// Chunk lengths: see the type docs.
    pub fn chunk_lens(&mut self) -> Vec<usize> {
        let n = usize::from(self.byte() % 8);
        (0..n).map(|_| usize::from(self.byte()) + 1).collect()
    }

    /// The payload: everything not read as control bytes.
    pub fn rest(self) -> &'a [u8] {
        self.data
    }
}

/// `payload` cut into chunks of `lens` (cycling); one chunk when `lens` is
/// empty; no chunk for an empty payload.
pub fn split<'a>(payload: &'a [u8], lens: &[usize]) -> Vec<&'a [u8]> {
    if payload.is_empty() {
        return Vec::new();
    }
    if lens.is_empty() {
        return vec![payload];
    }
    let mut out = Vec::new();
    let mut rest = payload;
    for &len in lens.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (head, tail) = rest.split_at(len.clamp(1, rest.len()));
        out.push(head);
        rest = tail;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_past_the_end_as_zero() {
        let mut s = Steer::new(b"\x02\x00\x04abc");
        assert_eq!(s.chunk_lens(), vec![1, 5]);
        assert_eq!(s.rest(), b"abc");
        let mut s = Steer::new(b"");
        assert_eq!(s.byte(), 0);
        assert!(s.chunk_lens().is_empty());
    }

    #[test]
    fn splits_cycling() {
        assert_eq!(
            split(b"abcdefg", &[1, 2]),
            vec![&b"a"[..], b"bc", b"d", b"ef", b"g"]
        );
        assert_eq!(split(b"abc", &[]), vec![&b"abc"[..]]);
        assert!(split(b"", &[3]).is_empty());
    }
}
