//! Each indexed file's id by its path, without a second copy of the path:
//! the table keeps a 64-bit hash of the path and the id, and a lookup
//! checks the path in the file's own entry (`FileEntry::path`), so two
//! paths whose hashes collide are both found (the later one in a short
//! overflow list). At 100,000 transcripts a `HashMap<String, u32>` held
//! ~26 MB (every path twice, and its slots); this holds ~2 MB.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};

/// Ids by path (see the module header); `S` hashes the paths (a fixed
/// one in tests, to make them collide).
#[derive(Debug, Default)]
pub(super) struct PathIds<S = RandomState> {
    hasher: S,
    /// The first id mapped with each hash.
    by_hash: HashMap<u64, u32>,
    /// Ids whose path's hash was already mapped to another path.
    more: Vec<(u64, u32)>,
}

impl<S: BuildHasher> PathIds<S> {
    /// Room for `n` paths.
    pub(super) fn with_capacity_and_hasher(n: usize, hasher: S) -> Self {
        Self {
            hasher,
            by_hash: HashMap::with_capacity(n),
            more: Vec::new(),
        }
    }

    /// The id of `path`; `path_of` gives an id's path.
    pub(super) fn get<'a>(&self, path: &str, path_of: impl Fn(u32) -> &'a str) -> Option<u32> {
        let h = self.hasher.hash_one(path);
        let first = self.by_hash.get(&h).copied();
        first
            .into_iter()
            .chain(
                self.more
                    .iter()
                    .filter(|(mh, _)| *mh == h)
                    .map(|(_, id)| *id),
            )
            .find(|&id| path_of(id) == path)
    }

    /// Maps `path` (not mapped yet) to `id`.
    pub(super) fn insert(&mut self, path: &str, id: u32) {
        let h = self.hasher.hash_one(path);
        match self.by_hash.entry(h) {
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(id);
            }
            std::collections::hash_map::Entry::Occupied(_) => self.more.push((h, id)),
        }
    }

    /// Forgets `path`'s mapping to `id`.
    pub(super) fn remove(&mut self, path: &str, id: u32) {
        let h = self.hasher.hash_one(path);
        if self.by_hash.get(&h) == Some(&id) {
            self.by_hash.remove(&h);
            // Another path with this hash takes the slot.
            if let Some(i) = self.more.iter().position(|(mh, _)| *mh == h) {
                let (_, other) = self.more.swap_remove(i);
                self.by_hash.insert(h, other);
            }
        } else if let Some(i) = self.more.iter().position(|m| *m == (h, id)) {
            self.more.swap_remove(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasherDefault;

    /// A hasher under which every path collides.
    #[derive(Default)]
    struct Same;
    impl std::hash::Hasher for Same {
        fn finish(&self) -> u64 {
            7
        }
        fn write(&mut self, _: &[u8]) {}
    }

    fn check<S: BuildHasher>(mut ids: PathIds<S>) {
        let paths = ["/a", "/b", "/c", "/d"];
        for (i, p) in paths.iter().enumerate() {
            assert_eq!(ids.get(p, |id| paths[id as usize]), None);
            ids.insert(p, i as u32);
        }
        for (i, p) in paths.iter().enumerate() {
            assert_eq!(ids.get(p, |id| paths[id as usize]), Some(i as u32));
        }
        ids.remove("/a", 0);
        ids.remove("/c", 2);
        assert_eq!(ids.get("/a", |id| paths[id as usize]), None);
        assert_eq!(ids.get("/c", |id| paths[id as usize]), None);
        assert_eq!(ids.get("/b", |id| paths[id as usize]), Some(1));
        assert_eq!(ids.get("/d", |id| paths[id as usize]), Some(3));
        assert_eq!(ids.get("/e", |id| paths[id as usize]), None);
    }

    /// Paths are found by their own text, whether or not their hashes
    /// collide, and a removed one is gone while the others stay.
    #[test]
    fn paths_are_found_by_their_text_even_when_hashes_collide() {
        check(PathIds::with_capacity_and_hasher(4, RandomState::new()));
        check(PathIds::with_capacity_and_hasher(
            4,
            BuildHasherDefault::<Same>::default(),
        ));
    }
}
