//! B-trees built bottom up from their cells in key order, as SQLite reads them: leaves filled
//! one after another and appended to the file, then each level of interior pages above them,
//! the top one written over the tree's root page (which the schema names). Every page but the
//! root has at least one cell (an interior page two children), which SQLite's integrity check
//! asks; nothing spills to overflow pages (a cell too large is [`Unsupported`]).

use super::format::*;
use super::Unsupported;
use crate::output_file::OutputFile;
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Pages appended to a database file after its last, the lock-byte page (the one holding byte
/// 2^30, which SQLite never uses) left as zeros; root pages written in place at the end.
pub(super) struct PageOut {
    out: OutputFile,
    file: File,
    pub(super) page_size: usize,
    pub(super) usable: usize,
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
            out,
            file,
            page_size,
            usable,
            next: page_count + 1,
            lock_page: ((1 << 30) / page_size + 1) as u32,
            zeros: vec![0; page_size],
            roots: Vec::new(),
        })
    }

    /// Appends `page` (its usable bytes) and returns its number.
    fn append(&mut self, page: &[u8]) -> std::io::Result<u32> {
        if self.next >= u32::MAX - 1 {
            return Err(std::io::Error::other("more pages than a database holds"));
        }
        if self.next == self.lock_page {
            self.out.write_all(&self.zeros)?;
            self.next += 1;
        }
        self.out.write_all(page)?;
        self.out
            .write_all(&self.zeros[..self.page_size - self.usable])?;
        self.next += 1;
        Ok(self.next - 1)
    }

    /// Writes every page, the roots in place, and the header's page count and change
    /// counter (read from `header`, the file's first 100 bytes). Where a root cannot be
    /// written, those written are put back as they were: the file is then SQLite's, with pages
    /// after its last, which the caller cuts off.
    pub(super) fn finish(mut self, mut header: [u8; 100]) -> std::io::Result<()> {
        self.out.flush()?;
        drop(self.out);
        let at = |number: u32| u64::from(number - 1) * self.page_size as u64;
        let mut before = Vec::with_capacity(self.roots.len());
        for (number, _) in &self.roots {
            let mut page = vec![0; self.usable];
            self.file.read_exact_at(&mut page, at(*number))?;
            before.push((*number, page));
        }
        for (number, page) in &self.roots {
            if let Err(e) = self.file.write_all_at(page, at(*number)) {
                for (number, page) in &before {
                    let _ = self.file.write_all_at(page, at(*number));
                }
                return Err(e);
            }
        }
        let counter = u32::from_be_bytes([header[24], header[25], header[26], header[27]])
            .wrapping_add(1)
            .to_be_bytes();
        header[24..28].copy_from_slice(&counter);
        header[92..96].copy_from_slice(&counter);
        header[28..32].copy_from_slice(&(self.next - 1).to_be_bytes());
        self.file.write_all_at(&header, 0)?;
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

    fn fits(&self, cell: usize) -> bool {
        self.header + 2 * (self.count + 1) + cell <= self.content
    }

    /// Adds a cell made of `parts`, which [`Page::fits`].
    fn push(&mut self, parts: &[&[u8]]) {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        self.content -= len;
        let mut at = self.content;
        for part in parts {
            self.bytes[at..at + part.len()].copy_from_slice(part);
            at += part.len();
        }
        let pointer = self.header + 2 * self.count;
        self.bytes[pointer..pointer + 2].copy_from_slice(&(self.content as u16).to_be_bytes());
        self.count += 1;
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

/// A b-tree's leaves, built from its cells in key order; [`Tree::finish`] builds the rest.
pub(super) struct Tree {
    kind: u8,
    root: u32,
    leaf: Page,
    /// The first leaf, held until a second one comes (a tree of one leaf is its root).
    first: Option<Vec<u8>>,
    children: Vec<Child>,
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
            children: Vec::new(),
            pending: None,
            max: max_local(out.usable, index),
            scratch: Vec::new(),
        }
    }

    /// Adds a table's row, after every row of a smaller rowid.
    pub(super) fn row(
        &mut self,
        out: &mut PageOut,
        rowid: i64,
        record: &[u8],
    ) -> Result<(), Unsupported> {
        if record.len() > self.max {
            return Err(Unsupported("a row larger than a page keeps"));
        }
        self.scratch.clear();
        put_varint(&mut self.scratch, record.len() as u64);
        put_varint(&mut self.scratch, rowid as u64);
        if !self.leaf.fits(self.scratch.len() + record.len()) {
            let mut key = Vec::with_capacity(9);
            put_varint(&mut key, self.last_rowid()? as u64);
            self.leaf_full(out, key)?;
        }
        self.leaf.push(&[&self.scratch, record]);
        Ok(())
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
    pub(super) fn entry(&mut self, out: &mut PageOut, record: &[u8]) -> Result<(), Unsupported> {
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
    fn leaf_full(&mut self, out: &mut PageOut, after: Vec<u8>) -> Result<(), Unsupported> {
        let mut page = std::mem::replace(&mut self.leaf, Page::new(out.usable, self.kind));
        page.finish(0);
        let page = page.bytes;
        if self.children.is_empty() {
            self.first = Some(page);
            self.children.push((0, after));
            return Ok(());
        }
        if let Some(first) = self.first.take() {
            self.children[0].0 = out.append(&first).map_err(Unsupported::io)?;
        }
        let number = out.append(&page).map_err(Unsupported::io)?;
        self.children.push((number, after));
        Ok(())
    }

    /// Builds the levels above the leaves and writes the top one over the root page.
    pub(super) fn finish(mut self, out: &mut PageOut) -> Result<(), Unsupported> {
        if let Some(last) = self.pending.take() {
            // The last entry did not fit its leaf: the leaf's own last entry separates them.
            let separator = self.leaf.pop();
            self.leaf_full(out, separator)?;
            self.leaf.push(&[&last]);
        }
        if self.children.is_empty() {
            // One leaf: the root.
            let page = self.leaf.finish(0).to_vec();
            out.roots.push((self.root, page));
            return Ok(());
        }
        if let Some(first) = self.first.take() {
            self.children[0].0 = out.append(&first).map_err(Unsupported::io)?;
        }
        let last = self.leaf.finish(0).to_vec();
        let number = out.append(&last).map_err(Unsupported::io)?;
        let after = match self.kind {
            LEAF_TABLE => {
                let mut key = Vec::new();
                put_varint(&mut key, self.last_rowid()? as u64);
                key
            }
            _ => Vec::new(),
        };
        self.children.push((number, after));
        let kind = match self.kind {
            LEAF_TABLE => INTERIOR_TABLE,
            _ => INTERIOR_INDEX,
        };
        let mut level = std::mem::take(&mut self.children);
        loop {
            let groups = groups(&level, out.usable)?;
            let top = groups.len() == 1;
            let mut above = Vec::with_capacity(groups.len());
            for range in groups {
                let mut page = Page::new(out.usable, kind);
                let (cells, right) = level[range.clone()].split_at(range.len() - 1);
                for (child, tail) in cells {
                    page.push(&[&child.to_be_bytes(), tail]);
                }
                let bytes = page.finish(right[0].0);
                if top {
                    out.roots.push((self.root, bytes.to_vec()));
                    return Ok(());
                }
                let number = out.append(bytes).map_err(Unsupported::io)?;
                above.push((number, right[0].1.clone()));
            }
            level = above;
        }
    }
}

/// `level`'s children cut into interior pages of `usable` bytes, each of two children at
/// least, filled in order: the range of children of each.
fn groups(level: &[Child], usable: usize) -> Result<Vec<std::ops::Range<usize>>, Unsupported> {
    let mut groups = Vec::new();
    let mut start = 0;
    while start < level.len() {
        // A page's cells: each child but its last, with what follows it.
        let mut used = INTERIOR_HEADER;
        let mut end = start + 1;
        while end < level.len() {
            let cell = 2 + 4 + level[end - 1].1.len();
            if used + cell > usable {
                break;
            }
            used += cell;
            end += 1;
        }
        groups.push(start..end);
        start = end;
    }
    // The last page takes a child from the one before where it would have none of its own.
    if let [.., before, last] = groups.as_mut_slice() {
        if last.len() == 1 {
            if before.len() < 3 {
                return Err(Unsupported("interior cells larger than a page keeps"));
            }
            before.end -= 1;
            last.start -= 1;
        }
    }
    Ok(groups)
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
        let mut out = PageOut::open(&path, 512, 512, 3).unwrap();
        out.lock_page = 5;
        let numbers: Vec<u32> = (1..=3u8).map(|n| out.append(&[n; 512]).unwrap()).collect();
        assert_eq!(numbers, [4, 6, 7]);
        out.roots.push((2, vec![9; 512]));
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

    proptest! {
        /// Interior pages hold every child once, in order, two at least each, and fit.
        #[test]
        fn children_are_cut_into_pages_of_two_at_least(
            tails in prop::collection::vec(0usize..60, 2..400),
        ) {
            let level: Vec<Child> = tails.iter().enumerate().map(|(i, len)| (i as u32, vec![1; *len])).collect();
            let usable = 512;
            let groups = groups(&level, usable).unwrap();
            let mut next = 0;
            for group in &groups {
                prop_assert_eq!(group.start, next);
                prop_assert!(group.len() >= 2);
                let cells: usize = level[group.start..group.end - 1].iter().map(|(_, t)| 2 + 4 + t.len()).sum();
                prop_assert!(INTERIOR_HEADER + cells <= usable);
                next = group.end;
            }
            prop_assert_eq!(next, level.len());
        }
    }
}
