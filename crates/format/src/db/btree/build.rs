//! B-trees built bottom up from their cells in key order, as SQLite reads them: leaves filled
//! one after another and appended to the file, each level of interior pages above them filled
//! as its children come (a few pages held per level, however large the tree: a list of every
//! leaf took 90 MB at 10^7 dispatches), the top one written over the tree's root page (which
//! the schema names). Every page but the
//! root has at least one cell (an interior page two children), which SQLite's integrity check
//! asks; nothing spills to overflow pages (a cell too large is [`Unsupported`]).

use super::format::*;
use super::Unsupported;
use crate::output_file::OutputFile;
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Mutex;

/// Pages appended to a database file after its last, the lock-byte page (the one holding byte
/// 2^30, which SQLite never uses) left as zeros; root pages written in place at the end. The
/// threads that build b-trees side by side append to it in turn.
pub(super) struct PageOut {
    pub(super) page_size: usize,
    pub(super) usable: usize,
    appending: Mutex<Appending>,
}

struct Appending {
    out: OutputFile,
    file: File,
    /// The number the next page appended gets.
    next: u32,
    lock_page: u32,
    zeros: Vec<u8>,
    roots: Vec<(u32, Vec<u8>)>,
}

impl PageOut {
    /// Appends to the database at `path`, `page_count` pages of `page_size` bytes (`usable` of
    /// them for the b-trees).
    pub(super) fn open(
        path: &Path,
        page_size: usize,
        usable: usize,
        page_count: u32,
    ) -> std::io::Result<PageOut> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)?;
        let end = u64::from(page_count) * page_size as u64;
        file.set_len(end)?;
        let out = OutputFile::at(file.try_clone()?, path, end)?;
        Ok(PageOut {
            page_size,
            usable,
            appending: Mutex::new(Appending {
                out,
                file,
                next: page_count + 1,
                lock_page: ((1 << 30) / page_size + 1) as u32,
                zeros: vec![0; page_size],
                roots: Vec::new(),
            }),
        })
    }

    fn appending(&self) -> std::sync::MutexGuard<'_, Appending> {
        self.appending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends `page` (its usable bytes) and returns its number.
    fn append(&self, page: &[u8]) -> std::io::Result<u32> {
        let a = &mut *self.appending();
        if a.next >= u32::MAX - 1 {
            return Err(std::io::Error::other("more pages than a database holds"));
        }
        if a.next == a.lock_page {
            a.out.write_all(&a.zeros)?;
            a.next += 1;
        }
        a.out.write_all(page)?;
        a.out.write_all(&a.zeros[..self.page_size - self.usable])?;
        a.next += 1;
        Ok(a.next - 1)
    }

    /// Writes `page` over the root page `number` when the pages are finished.
    fn root(&self, number: u32, page: Vec<u8>) {
        self.appending().roots.push((number, page));
    }

    /// Writes every page, the roots in place, and the header's page count and change
    /// counter (read from `header`, the file's first 100 bytes). Where a root cannot be
    /// written, those written are put back as they were: the file is then SQLite's, with pages
    /// after its last, which the caller cuts off.
    pub(super) fn finish(self, mut header: [u8; 100]) -> std::io::Result<()> {
        let Appending {
            mut out,
            file,
            next,
            roots,
            ..
        } = self
            .appending
            .into_inner()
            .unwrap_or_else(|e| e.into_inner());
        out.flush()?;
        drop(out);
        let at = |number: u32| u64::from(number - 1) * self.page_size as u64;
        let mut before = Vec::with_capacity(roots.len());
        for (number, _) in &roots {
            let mut page = vec![0; self.usable];
            file.read_exact_at(&mut page, at(*number))?;
            before.push((*number, page));
        }
        for (number, page) in &roots {
            if let Err(e) = file.write_all_at(page, at(*number)) {
                for (number, page) in &before {
                    let _ = file.write_all_at(page, at(*number));
                }
                return Err(e);
            }
        }
        let counter = u32::from_be_bytes([header[24], header[25], header[26], header[27]])
            .wrapping_add(1)
            .to_be_bytes();
        header[24..28].copy_from_slice(&counter);
        header[92..96].copy_from_slice(&counter);
        header[28..32].copy_from_slice(&(next - 1).to_be_bytes());
        file.write_all_at(&header, 0)?;
        Ok(())
    }
}

/// A page being filled with cells, from its end down, their pointers after its header.
struct Page {
    bytes: Vec<u8>,
    header: usize,
    count: usize,
    /// Where the lowest cell begins.
    content: usize,
}

impl Page {
    fn new(usable: usize, kind: u8) -> Page {
        let mut bytes = vec![0; usable];
        bytes[0] = kind;
        let interior = kind == INTERIOR_INDEX || kind == INTERIOR_TABLE;
        Page {
            bytes,
            header: if interior {
                INTERIOR_HEADER
            } else {
                LEAF_HEADER
            },
            count: 0,
            content: usable,
        }
    }

    /// Empties the page (its bytes zeros but its kind) to be filled again.
    fn clear(&mut self) {
        let kind = self.bytes[0];
        self.bytes.fill(0);
        self.bytes[0] = kind;
        self.count = 0;
        self.content = self.bytes.len();
    }

    fn fits(&self, cell: usize) -> bool {
        self.header + 2 * (self.count + 1) + cell <= self.content
    }

    /// Adds a cell made of `parts`, which [`Page::fits`].
    fn push(&mut self, parts: &[&[u8]]) {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        let mut cell = self.push_with(len);
        for part in parts {
            let (here, rest) = cell.split_at_mut(part.len());
            here.copy_from_slice(part);
            cell = rest;
        }
    }

    /// Adds a cell of `len` bytes, which [`Page::fits`]: its bytes, to write.
    fn push_with(&mut self, len: usize) -> &mut [u8] {
        self.content -= len;
        let pointer = self.header + 2 * self.count;
        self.bytes[pointer..pointer + 2].copy_from_slice(&(self.content as u16).to_be_bytes());
        self.count += 1;
        &mut self.bytes[self.content..self.content + len]
    }

    /// The last cell added, taken out.
    fn pop(&mut self) -> Vec<u8> {
        self.count -= 1;
        let pointer = self.header + 2 * self.count;
        let at = usize::from(u16::from_be_bytes([
            self.bytes[pointer],
            self.bytes[pointer + 1],
        ]));
        let end = match self.count {
            0 => self.bytes.len(),
            _ => {
                let before = pointer - 2;
                usize::from(u16::from_be_bytes([
                    self.bytes[before],
                    self.bytes[before + 1],
                ]))
            }
        };
        self.bytes[pointer..pointer + 2].fill(0);
        self.content = end;
        let cell = self.bytes[at..end].to_vec();
        self.bytes[at..end].fill(0);
        cell
    }

    /// The page's bytes, its header written (`right`: an interior page's right-most child).
    fn finish(&mut self, right: u32) -> &[u8] {
        self.bytes[3..5].copy_from_slice(&(self.count as u16).to_be_bytes());
        // 65,536 is written 0.
        self.bytes[5..7].copy_from_slice(&(self.content as u16).to_be_bytes());
        if self.header == INTERIOR_HEADER {
            self.bytes[8..12].copy_from_slice(&right.to_be_bytes());
        }
        &self.bytes
    }
}

/// A child of the level above and what its cell there holds after the child's page number: a
/// table's largest rowid under the child, an index's entry after it (none after the last).
type Child = (u32, Vec<u8>);

/// A b-tree's leaves, built from its cells in key order, and the levels above them as they
/// fill ([`Levels`]): what is held is a few pages, however large the tree.
pub(super) struct Tree {
    kind: u8,
    root: u32,
    leaf: Page,
    /// The first leaf and what follows it, held until a second one comes (a tree of one leaf
    /// is its root).
    first: Option<(Vec<u8>, Vec<u8>)>,
    /// Whether a leaf was appended.
    appended: bool,
    levels: Levels,
    /// An index's entry that did not fit the last leaf: the separator after it, once another
    /// entry comes.
    pending: Option<Vec<u8>>,
    max: usize,
    scratch: Vec<u8>,
}

impl Tree {
    /// A table's b-tree (`index` false) or an index's, whose root is page `root`.
    pub(super) fn new(out: &PageOut, index: bool, root: u32) -> Tree {
        let kind = if index { LEAF_INDEX } else { LEAF_TABLE };
        Tree {
            kind,
            root,
            leaf: Page::new(out.usable, kind),
            first: None,
            appended: false,
            levels: Levels {
                kind: if index {
                    INTERIOR_INDEX
                } else {
                    INTERIOR_TABLE
                },
                levels: Vec::new(),
            },
            pending: None,
            max: max_local(out.usable, index),
            scratch: Vec::new(),
        }
    }

    /// Adds a table's row, after every row of a smaller rowid: its record, `len` bytes, which
    /// `write` writes into the slice it is given.
    pub(super) fn row(
        &mut self,
        out: &PageOut,
        rowid: i64,
        len: usize,
        write: impl FnOnce(&mut [u8]) -> Result<(), Unsupported>,
    ) -> Result<(), Unsupported> {
        if len > self.max {
            return Err(Unsupported("a row larger than a page keeps"));
        }
        let mut head = [0u8; 18];
        let mut at = put_varint_at(&mut head, len as u64);
        at += put_varint_at(&mut head[at..], rowid as u64);
        if !self.leaf.fits(at + len) {
            let mut key = Vec::with_capacity(9);
            put_varint(&mut key, self.last_rowid()? as u64);
            self.leaf_full(out, key)?;
        }
        let cell = self.leaf.push_with(at + len);
        cell[..at].copy_from_slice(&head[..at]);
        write(&mut cell[at..])
    }

    /// The rowid of the last row in the leaf being filled.
    fn last_rowid(&self) -> Result<i64, Unsupported> {
        let pointer = self.leaf.header + 2 * (self.leaf.count - 1);
        let at = usize::from(u16::from_be_bytes([
            self.leaf.bytes[pointer],
            self.leaf.bytes[pointer + 1],
        ]));
        let (_, len) = get_varint(&self.leaf.bytes[at..])?;
        Ok(get_varint(&self.leaf.bytes[at + len..])?.0 as i64)
    }

    /// Adds an index's entry (its record), after every smaller one.
    pub(super) fn entry(&mut self, out: &PageOut, record: &[u8]) -> Result<(), Unsupported> {
        if record.len() > self.max {
            return Err(Unsupported("an index entry larger than a page keeps"));
        }
        self.scratch.clear();
        put_varint(&mut self.scratch, record.len() as u64);
        self.scratch.extend_from_slice(record);
        if let Some(separator) = self.pending.take() {
            self.leaf_full(out, separator)?;
        }
        if self.leaf.fits(self.scratch.len()) {
            self.leaf.push(&[&self.scratch]);
        } else {
            // The separator between this leaf and the next, once an entry follows.
            self.pending = Some(std::mem::take(&mut self.scratch));
        }
        Ok(())
    }

    /// The leaf being filled is complete: appended (the first held), a child of the level
    /// above with `after` in its cell there.
    fn leaf_full(&mut self, out: &PageOut, after: Vec<u8>) -> Result<(), Unsupported> {
        self.leaf.finish(0);
        if !self.appended && self.first.is_none() {
            let next = Page::new(out.usable, self.kind);
            let first = std::mem::replace(&mut self.leaf, next).bytes;
            self.first = Some((first, after));
            return Ok(());
        }
        self.append_first(out)?;
        let number = out.append(&self.leaf.bytes).map_err(Unsupported::io)?;
        self.leaf.clear();
        self.levels.add(out, 0, (number, after))
    }

    /// Appends the first leaf where it is held.
    fn append_first(&mut self, out: &PageOut) -> Result<(), Unsupported> {
        if let Some((first, after)) = self.first.take() {
            let number = out.append(&first).map_err(Unsupported::io)?;
            self.levels.add(out, 0, (number, after))?;
        }
        self.appended = true;
        Ok(())
    }

    /// Completes the levels above the leaves and writes the top page over the root page.
    pub(super) fn finish(mut self, out: &PageOut) -> Result<(), Unsupported> {
        if let Some(last) = self.pending.take() {
            // The last entry did not fit its leaf: the leaf's own last entry separates them.
            let separator = self.leaf.pop();
            self.leaf_full(out, separator)?;
            self.leaf.push(&[&last]);
        }
        if !self.appended && self.first.is_none() {
            // One leaf: the root.
            let page = self.leaf.finish(0).to_vec();
            out.root(self.root, page);
            return Ok(());
        }
        self.append_first(out)?;
        let after = match self.kind {
            LEAF_TABLE => {
                let mut key = Vec::new();
                put_varint(&mut key, self.last_rowid()? as u64);
                key
            }
            _ => Vec::new(),
        };
        self.leaf.finish(0);
        let number = out.append(&self.leaf.bytes).map_err(Unsupported::io)?;
        self.levels.add(out, 0, (number, after))?;
        self.levels.finish(out, self.root)
    }
}

/// The interior levels of a b-tree, filled as their children come, the lowest first: each
/// interior page takes children while their cells fit (the last one its right-most child),
/// and every page has two children at least, the last of a level taking one from the page
/// before it where it would have one alone.
struct Levels {
    kind: u8,
    levels: Vec<Level>,
}

/// A level's page being filled, its last child (not a cell yet: it may be the right-most),
/// the full page before it held until this one has a cell, and whether it appended a page.
struct Level {
    page: Page,
    last: Option<Child>,
    held: Option<(Page, Child)>,
    appended: bool,
}

impl Levels {
    /// Adds `child` to level `at` (0: above the leaves).
    fn add(&mut self, out: &PageOut, at: usize, child: Child) -> Result<(), Unsupported> {
        if at == self.levels.len() {
            self.levels.push(Level {
                page: Page::new(out.usable, self.kind),
                last: None,
                held: None,
                appended: false,
            });
        }
        let level = &mut self.levels[at];
        let Some(last) = level.last.replace(child) else {
            return Ok(());
        };
        if level.page.fits(4 + last.1.len()) {
            level.page.push(&[&last.0.to_be_bytes(), &last.1]);
            if level.page.count == 1 {
                if let Some((held, right)) = level.held.take() {
                    return self.append(out, at, held, right);
                }
            }
            return Ok(());
        }
        // The page is full, `last` its right-most child.
        let full = std::mem::replace(&mut level.page, Page::new(out.usable, self.kind));
        level.held = Some((full, last));
        Ok(())
    }

    /// Appends level `at`'s page `page` whose right-most child is `right`: a child of the
    /// level above.
    fn append(
        &mut self,
        out: &PageOut,
        at: usize,
        mut page: Page,
        right: Child,
    ) -> Result<(), Unsupported> {
        let number = out.append(page.finish(right.0)).map_err(Unsupported::io)?;
        self.levels[at].appended = true;
        self.add(out, at + 1, (number, right.1))
    }

    /// Completes each level, the lowest first; the top one's page is written over `root`.
    fn finish(mut self, out: &PageOut, root: u32) -> Result<(), Unsupported> {
        let mut at = 0;
        while at < self.levels.len() {
            let level = &mut self.levels[at];
            let mut page = std::mem::replace(&mut level.page, Page::new(out.usable, self.kind));
            let last = (level.last.take()).ok_or(Unsupported("an interior level without pages"))?;
            if page.count == 0 {
                // One child alone: the page before gives it its right-most child.
                let (mut before, right) =
                    (level.held.take()).ok_or(Unsupported("an interior level of one child"))?;
                if before.count < 2 {
                    return Err(Unsupported("interior cells larger than a page keeps"));
                }
                let cell = before.pop();
                let (child, after) = cell.split_at(4);
                let child = u32::from_be_bytes(child.try_into().unwrap_or_default());
                page.push(&[&right.0.to_be_bytes(), &right.1]);
                self.append(out, at, before, (child, after.to_vec()))?;
            }
            if !self.levels[at].appended {
                out.root(root, page.finish(last.0).to_vec());
                return Ok(());
            }
            self.append(out, at, page, last)?;
            at += 1;
        }
        Err(Unsupported("an interior level without pages"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Pages are appended after the file's last, the lock-byte page left as zeros, and the
    /// header counts them.
    #[test]
    fn appended_pages_pass_over_the_lock_byte_page() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        std::fs::write(&path, vec![7u8; 3 * 512]).unwrap();
        let out = PageOut::open(&path, 512, 512, 3).unwrap();
        out.appending().lock_page = 5;
        let numbers: Vec<u32> = (1..=3u8).map(|n| out.append(&[n; 512]).unwrap()).collect();
        assert_eq!(numbers, [4, 6, 7]);
        out.root(2, vec![9; 512]);
        out.finish([0; 100]).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let page = |n: usize| &bytes[(n - 1) * 512..n * 512];
        assert_eq!(bytes.len(), 7 * 512);
        assert_eq!(&page(1)[28..32], &7u32.to_be_bytes());
        // The change counter moved on, and the page count is valid for it.
        assert_eq!(&page(1)[24..28], &1u32.to_be_bytes());
        assert_eq!(&page(1)[92..96], &1u32.to_be_bytes());
        assert_eq!(page(2), [9; 512]);
        assert_eq!(page(3), [7; 512]);
        assert_eq!(page(4), [1; 512]);
        assert_eq!(page(5), [0; 512]);
        assert_eq!((page(6), page(7)), (&[2; 512][..], &[3; 512][..]));
    }

    /// The children under interior page `number` of `bytes` (pages of 512 bytes; a number from
    /// 100,000 is a leaf's), in order, each with what follows it (the last one's left empty),
    /// and their depth; every page has two children at least.
    fn children(bytes: &[u8], number: u32) -> (Vec<Child>, usize) {
        if number >= 100_000 {
            return (vec![(number, Vec::new())], 0);
        }
        let page = &bytes[(number as usize - 1) * 512..number as usize * 512];
        assert_eq!(page[0], INTERIOR_INDEX);
        let count = usize::from(u16::from_be_bytes([page[3], page[4]]));
        assert!(count >= 1, "page {number} has one child");
        let (mut all, mut depths) = (Vec::new(), Vec::new());
        let mut end = 512;
        for i in 0..count {
            let at = usize::from(u16::from_be_bytes([page[12 + 2 * i], page[13 + 2 * i]]));
            let child = u32::from_be_bytes(page[at..at + 4].try_into().unwrap());
            let (mut below, depth) = children(bytes, child);
            below.last_mut().unwrap().1 = page[at + 4..end].to_vec();
            all.extend(below);
            depths.push(depth);
            end = at;
        }
        let (below, depth) = children(bytes, u32::from_be_bytes(page[8..12].try_into().unwrap()));
        all.extend(below);
        depths.push(depth);
        assert!(depths.iter().all(|d| *d == depths[0]), "unbalanced");
        (all, depths[0] + 1)
    }

    proptest! {
        /// Interior levels hold every child once, in order, with what follows it, every page
        /// two children at least, every leaf at the same depth.
        #[test]
        fn levels_hold_every_child_in_order(
            tails in prop::collection::vec(0usize..60, 2..1_500),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("db");
            std::fs::write(&path, vec![0u8; 2 * 512]).unwrap();
            let out = PageOut::open(&path, 512, 512, 2).unwrap();
            let mut levels = Levels { kind: INTERIOR_INDEX, levels: Vec::new() };
            let given: Vec<Child> = (tails.iter().enumerate())
                .map(|(i, len)| (100_000 + i as u32, vec![i as u8; *len]))
                .collect();
            for child in &given {
                levels.add(&out, 0, child.clone()).unwrap();
            }
            levels.finish(&out, 2).unwrap();
            out.finish([0; 100]).unwrap();
            let bytes = std::fs::read(&path).unwrap();
            let (mut read, _) = children(&bytes, 2);
            read.last_mut().unwrap().1 = given.last().unwrap().1.clone();
            prop_assert_eq!(read, given);
        }
    }
}
