//! A stored file's b-trees read in key order: a table's leaves (their rows, rowid and record)
//! and an index's entries. The file's tables grew side by side, so a table's leaves lie among
//! the others' (one in ten pages): a merge reads each file once from start to end, a window at a
//! time ([`Pages::read_at`]), handing each leaf to its table ([`leaves`] finds which pages are
//! whose from the interior pages alone), and reads an index's pages one by one. Anything unexpected (a page of
//! the wrong kind, a cell past its page, a payload spilled to overflow pages) is
//! [`Unsupported`].

use super::format::*;
use super::Unsupported;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// A database file's pages.
pub(super) struct Pages {
    file: File,
    pub(super) page_size: usize,
    /// Bytes a page holds for its b-tree (its size less the reserved bytes at its end).
    pub(super) usable: usize,
    page_count: u32,
    /// The last page read, and its number (0: none).
    buffer: Vec<u8>,
    held: u32,
}

/// The file header (its 100 bytes) and the fields this module needs: page size, reserved bytes,
/// page count, schema format, text encoding.
pub(super) struct Header {
    pub(super) bytes: [u8; 100],
    pub(super) page_size: usize,
    pub(super) reserved: usize,
    pub(super) page_count: u32,
    pub(super) schema_format: u32,
    pub(super) encoding: u32,
}

impl Header {
    pub(super) fn read(file: &File) -> Result<Header, Unsupported> {
        let mut bytes = [0u8; 100];
        file.read_exact_at(&mut bytes, 0)
            .map_err(|_| Unsupported("a file shorter than its header"))?;
        if &bytes[..16] != b"SQLite format 3\0" {
            return Err(Unsupported("a file that is no SQLite database"));
        }
        let page_size = match u16::from_be_bytes([bytes[16], bytes[17]]) {
            1 => 65_536,
            size => usize::from(size),
        };
        if bytes[24..28] != bytes[92..96] {
            // The change counter is not the one the page count is valid for: the count is stale
            // (an older SQLite wrote the file).
            return Err(Unsupported("a header whose page count is not current"));
        }
        let field = |at: usize| {
            u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
        };
        Ok(Header {
            bytes,
            page_size,
            reserved: usize::from(bytes[20]),
            page_count: field(28),
            schema_format: field(44),
            encoding: field(56),
        })
    }
}

impl Pages {
    pub(super) fn open(path: &Path) -> Result<Pages, Unsupported> {
        let file =
            File::open(path).map_err(|_| Unsupported("a stored file that cannot be read"))?;
        let header = Header::read(&file)?;
        if header.page_size < 512 || header.reserved >= header.page_size / 2 {
            return Err(Unsupported("a page size this module does not write"));
        }
        Ok(Pages {
            file,
            page_size: header.page_size,
            usable: header.page_size - header.reserved,
            page_count: header.page_count,
            buffer: vec![0; header.page_size],
            held: 0,
        })
    }

    /// Reads pages from `first` on into `bytes` (whole pages).
    pub(super) fn read_at(&self, first: u32, bytes: &mut [u8]) -> Result<(), Unsupported> {
        let count = (bytes.len() / self.page_size) as u64;
        if first == 0 || u64::from(first) + count - 1 > u64::from(self.page_count) {
            return Err(Unsupported("a page number past the file"));
        }
        let at = u64::from(first - 1) * self.page_size as u64;
        self.file
            .read_exact_at(bytes, at)
            .map_err(|_| Unsupported("a page that cannot be read"))
    }

    /// Page `number` (from 1), its usable bytes.
    pub(super) fn page(&mut self, number: u32) -> Result<&[u8], Unsupported> {
        if number == 0 || number > self.page_count {
            return Err(Unsupported("a page number past the file"));
        }
        if self.held != number {
            self.held = 0;
            let at = u64::from(number - 1) * self.page_size as u64;
            self.file
                .read_exact_at(&mut self.buffer, at)
                .map_err(|_| Unsupported("a page that cannot be read"))?;
            self.held = number;
        }
        Ok(&self.buffer[..self.usable])
    }
}

/// A b-tree page's cells: its type, the offset of each cell, the right-most child (interior).
pub(super) struct Node {
    pub(super) kind: u8,
    pub(super) cells: Vec<usize>,
    pub(super) right: u32,
}

impl Node {
    /// Page `number`'s node, of one of `kinds`.
    pub(super) fn read(page: &[u8], number: u32, kinds: [u8; 2]) -> Result<Node, Unsupported> {
        let header = if number == 1 { 100 } else { 0 };
        let at = |offset: usize, len: usize| {
            page.get(header + offset..header + offset + len)
                .ok_or(Unsupported("a page header past its page"))
        };
        let kind = at(0, 1)?[0];
        if !kinds.contains(&kind) {
            return Err(Unsupported("a page of another kind than its b-tree's"));
        }
        let count = usize::from(u16::from_be_bytes(at(3, 2)?.try_into().unwrap_or_default()));
        let interior = kind == INTERIOR_INDEX || kind == INTERIOR_TABLE;
        let right = if interior {
            u32::from_be_bytes(at(8, 4)?.try_into().unwrap_or_default())
        } else {
            0
        };
        let pointers = at(if interior { 12 } else { 8 }, 2 * count)?;
        let cells = pointers
            .chunks_exact(2)
            .map(|p| usize::from(u16::from_be_bytes([p[0], p[1]])))
            .collect();
        Ok(Node { kind, cells, right })
    }

    fn interior(&self) -> bool {
        self.kind == INTERIOR_INDEX || self.kind == INTERIOR_TABLE
    }
}

/// The left child of the interior cell at `at`.
fn child(page: &[u8], at: usize) -> Result<u32, Unsupported> {
    let bytes = page
        .get(at..at + 4)
        .ok_or(Unsupported("a cell past its page"))?;
    Ok(u32::from_be_bytes(bytes.try_into().unwrap_or_default()))
}

/// The payload of the cell whose payload size starts at `at` (after its left child or rowid):
/// the payload and what is after it. A payload larger than a page keeps is `Unsupported`.
fn payload(page: &[u8], at: usize, size: u64, max: usize) -> Result<&[u8], Unsupported> {
    let size = usize::try_from(size).unwrap_or(usize::MAX);
    if size > max {
        return Err(Unsupported("a payload spilled to overflow pages"));
    }
    page.get(at..at + size)
        .ok_or(Unsupported("a cell past its page"))
}

/// The leaves of the table whose root is page `root`, in rowid order: read from its interior
/// pages (and the first child of each of the lowest, which says they are the leaves).
pub(super) fn leaves(pages: &mut Pages, root: u32) -> Result<Vec<u32>, Unsupported> {
    let mut level = vec![root];
    for _ in 0..40 {
        let mut below = Vec::new();
        for &number in &level {
            let page = pages.page(number)?;
            let node = Node::read(page, number, [INTERIOR_TABLE, LEAF_TABLE])?;
            if !node.interior() {
                // A level is all leaves or all interior pages (the tree is balanced).
                return match number == level[0] {
                    true => Ok(level),
                    false => Err(Unsupported("a table's b-tree not balanced")),
                };
            }
            for &at in &node.cells {
                below.push(child(page, at)?);
            }
            below.push(node.right);
        }
        level = below;
    }
    Err(Unsupported("a b-tree deeper than a file allows"))
}

/// Calls `row` with each row of the table leaf `page` (page `number`): its rowid and record.
pub(super) fn leaf_rows(
    page: &[u8],
    number: u32,
    mut row: impl FnMut(i64, &[u8]) -> Result<(), Unsupported>,
) -> Result<(), Unsupported> {
    let max = max_local(page.len(), false);
    let node = Node::read(page, number, [LEAF_TABLE, LEAF_TABLE])?;
    for &at in &node.cells {
        let cell = page.get(at..).ok_or(Unsupported("a cell past its page"))?;
        let (size, a) = get_varint(cell)?;
        let (rowid, b) = get_varint(&cell[a..])?;
        row(rowid as i64, payload(cell, a + b, size, max)?)?;
    }
    Ok(())
}

/// An index's entries in key order (each a record), read as they are taken.
pub(super) struct Entries {
    pages: Pages,
    /// Pages entered and not finished: the page's bytes, its node, and the next cell.
    stack: Vec<(Vec<u8>, Node, usize)>,
    max: usize,
}

impl Entries {
    pub(super) fn new(pages: Pages, root: u32) -> Result<Entries, Unsupported> {
        let max = max_local(pages.usable, true);
        let mut entries = Entries {
            pages,
            stack: Vec::new(),
            max,
        };
        entries.enter(root)?;
        Ok(entries)
    }

    /// Enters page `number` and, down its first children, the leaf where its entries begin.
    fn enter(&mut self, mut number: u32) -> Result<(), Unsupported> {
        loop {
            if self.stack.len() > 40 {
                return Err(Unsupported("a b-tree deeper than a file allows"));
            }
            let page = self.pages.page(number)?.to_vec();
            let node = Node::read(&page, number, [INTERIOR_INDEX, LEAF_INDEX])?;
            let first = match (node.interior(), node.cells.first()) {
                (true, Some(&at)) => Some(child(&page, at)?),
                (true, None) => Some(node.right),
                (false, _) => None,
            };
            self.stack.push((page, node, 0));
            match first {
                Some(child) => number = child,
                None => return Ok(()),
            }
        }
    }

    /// Writes the next entry (its record) into `out`: false after the last.
    pub(super) fn next_entry(&mut self, out: &mut Vec<u8>) -> Result<bool, Unsupported> {
        loop {
            let Some((page, node, next)) = self.stack.last_mut() else {
                return Ok(false);
            };
            if *next == node.cells.len() {
                self.stack.pop();
                continue;
            }
            let interior = node.interior();
            let at = node.cells[*next];
            *next += 1;
            let cell = page
                .get(if interior { at + 4 } else { at }..)
                .ok_or(Unsupported("a cell past its page"))?;
            let (size, len) = get_varint(cell)?;
            out.clear();
            out.extend_from_slice(payload(cell, len, size, self.max)?);
            if interior {
                // The entries of the child after this one come next: the next cell's child,
                // or the right-most.
                let after = match node.cells.get(*next) {
                    Some(&at) => child(page, at)?,
                    None => node.right,
                };
                self.enter(after)?;
            }
            return Ok(true);
        }
    }
}
