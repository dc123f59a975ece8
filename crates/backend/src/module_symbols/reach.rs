//! Which side effects each text section of a cubin reaches: a graph of its text sections and
//! the data they point at, linked by relocations and `.nv.callgraph` entries, with each
//! undefined symbol's [`SideEffect`] propagated back to every caller (see the module
//! documentation of `module_symbols`).

use super::side_effect::SideEffect;
use std::collections::{HashMap, HashSet};

use object::{
    elf, BinaryFormat, Object, ObjectSection, ObjectSymbol, RelocationTarget, SectionFlags,
    SectionIndex, SectionKind, SymbolIndex, SymbolKind,
};

/// `SHT_CUDA_CALLGRAPH`: pairs of 32-bit symbol indices, in blocks that a pair `(0, marker)`
/// opens: `0xffffffff` calls (caller, callee); `0xfffffffe` functions whose address is taken
/// (function, prototype); `0xfffffffd` functions making indirect calls (function, prototype);
/// `0xfffffffc` address references (function, function whose address it takes).
const SHT_CUDA_CALLGRAPH: u32 = 0x7000_0001;
pub(super) const CALLGRAPH_CALLS: u32 = 0xffff_ffff;
pub(super) const CALLGRAPH_ADDRESS_TAKEN: u32 = 0xffff_fffe;
pub(super) const CALLGRAPH_INDIRECT_CALLERS: u32 = 0xffff_fffd;
pub(super) const CALLGRAPH_ADDRESS_REFERENCES: u32 = 0xffff_fffc;

/// What calls can go through: a text section, a span of a data section (relocation offsets
/// as the file gives them), or any function whose address is taken (the target of an
/// indirect call).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Node {
    Text(SectionIndex),
    Data(SectionIndex, u64, u64),
    AddressTaken,
}

/// Where a relocation or a call-graph entry leads.
enum Reach {
    Effects(u8),
    Node(Node),
    Nothing,
}

/// The side effects each text section reaches.
#[derive(Debug, Default)]
pub(super) struct SideEffects {
    by_section: HashMap<SectionIndex, u8>,
    /// What every kernel gets: effects whose calls could not be attributed.
    pub(super) everywhere: u8,
}

impl SideEffects {
    pub(super) fn of_section(&self, index: SectionIndex) -> u8 {
        self.by_section.get(&index).copied().unwrap_or(0) | self.everywhere
    }

    pub(super) fn analyze(file: &object::File<'_>) -> SideEffects {
        let mut present = 0;
        for symbol in file.symbols() {
            if symbol.is_undefined() {
                if let Some(effect) = symbol.name().ok().and_then(SideEffect::of_external) {
                    present |= effect.bit();
                }
            }
        }
        if present == 0 {
            return SideEffects::default();
        }
        let mut graph = Graph::new(file);
        graph.read_callgraph();
        while let Some(id) = graph.pending.pop() {
            graph.follow(id);
        }
        let reached = graph.propagate();
        let attributed = graph.direct.iter().fold(0, |all, bits| all | bits);
        let everywhere = if graph.unreadable {
            present
        } else {
            present & !attributed
        };
        let by_section = graph
            .nodes
            .iter()
            .zip(reached)
            .filter_map(|(node, bits)| match node {
                Node::Text(index) if bits != 0 => Some((*index, bits)),
                _ => None,
            })
            .collect();
        SideEffects {
            by_section,
            everywhere,
        }
    }
}

struct Graph<'f, 'data> {
    file: &'f object::File<'data>,
    /// Each section's relocations, by offset.
    relocations: HashMap<SectionIndex, Vec<(u64, RelocationTarget)>>,
    text: HashSet<SectionIndex>,
    nodes: Vec<Node>,
    ids: HashMap<Node, usize>,
    /// Effects of each node's own calls.
    direct: Vec<u8>,
    /// (caller, callee) node ids.
    edges: Vec<(usize, usize)>,
    /// Nodes whose relocations are still to be followed.
    pending: Vec<usize>,
    /// A relocation section or the call graph could not be read in full.
    unreadable: bool,
}

impl<'f, 'data> Graph<'f, 'data> {
    /// Reads every section's relocations and makes a node of each text section.
    fn new(file: &'f object::File<'data>) -> Self {
        let mut graph = Graph {
            file,
            relocations: HashMap::new(),
            text: HashSet::new(),
            nodes: Vec::new(),
            ids: HashMap::new(),
            direct: Vec::new(),
            edges: Vec::new(),
            pending: Vec::new(),
            unreadable: false,
        };
        let (rel, rela) = if file.is_64() { (16, 24) } else { (8, 12) };
        let (mut expected, mut read) = (0u64, 0u64);
        for section in file.sections() {
            if let SectionFlags::Elf { sh_type, .. } = section.flags() {
                let entry = match sh_type {
                    elf::SHT_REL => Some(rel),
                    elf::SHT_RELA => Some(rela),
                    // Variable-length entries: whether all were read cannot be checked.
                    elf::SHT_CREL => {
                        graph.unreadable = true;
                        None
                    }
                    _ => None,
                };
                if let Some(entry) = entry {
                    expected += section.size() / entry;
                    graph.unreadable |= section.size() % entry != 0;
                }
            }
            let mut list: Vec<_> = section
                .relocations()
                .map(|(offset, relocation)| (offset, relocation.target()))
                .collect();
            read += list.len() as u64;
            if section.kind() == SectionKind::Text
                || section.name().is_ok_and(|n| n.starts_with(".text"))
            {
                graph.text.insert(section.index());
                graph.node(Node::Text(section.index()));
            }
            if !list.is_empty() {
                list.sort_by_key(|(offset, _)| *offset);
                graph.relocations.insert(section.index(), list);
            }
        }
        // The object crate skips relocation sections it cannot read or tie to the symbol table.
        if file.format() == BinaryFormat::Elf && read != expected {
            graph.unreadable = true;
        }
        graph
    }

    fn node(&mut self, node: Node) -> usize {
        if let Some(&id) = self.ids.get(&node) {
            return id;
        }
        let id = self.nodes.len();
        self.nodes.push(node);
        self.ids.insert(node, id);
        self.direct.push(0);
        self.pending.push(id);
        id
    }

    fn link(&mut self, from: usize, reach: Reach) {
        match reach {
            Reach::Effects(bits) => self.direct[from] |= bits,
            Reach::Node(node) => {
                let to = self.node(node);
                self.edges.push((from, to));
            }
            Reach::Nothing => {}
        }
    }

    fn section_node(&self, index: SectionIndex) -> Node {
        if self.text.contains(&index) {
            Node::Text(index)
        } else {
            Node::Data(index, 0, u64::MAX)
        }
    }

    fn symbol(&mut self, index: SymbolIndex) -> Reach {
        let Ok(symbol) = self.file.symbol_by_index(index) else {
            self.unreadable = true;
            return Reach::Nothing;
        };
        if symbol.is_undefined() {
            let effect = symbol.name().ok().and_then(SideEffect::of_external);
            return effect.map_or(Reach::Nothing, |e| Reach::Effects(e.bit()));
        }
        let Some(section) = symbol.section_index() else {
            return Reach::Nothing;
        };
        match self.section_node(section) {
            Node::Data(..) if symbol.size() > 0 && symbol.kind() != SymbolKind::Section => {
                let start = symbol.address();
                Reach::Node(Node::Data(
                    section,
                    start,
                    start.saturating_add(symbol.size()),
                ))
            }
            node => Reach::Node(node),
        }
    }

    /// The text node of the function with symbol index `index`, if it is one.
    fn function(&mut self, index: u32) -> Option<usize> {
        if index == 0 {
            return None;
        }
        match self.symbol(SymbolIndex(index as usize)) {
            Reach::Node(node @ Node::Text(_)) => Some(self.node(node)),
            _ => None,
        }
    }

    /// Follows the relocations inside node `id`.
    fn follow(&mut self, id: usize) {
        let (section, start, end) = match self.nodes[id] {
            Node::Text(section) => (section, 0, u64::MAX),
            Node::Data(section, start, end) => (section, start, end),
            Node::AddressTaken => return,
        };
        let Some(list) = self.relocations.get(&section) else {
            return;
        };
        let first = list.partition_point(|(offset, _)| *offset < start);
        let targets: Vec<RelocationTarget> = list[first..]
            .iter()
            .take_while(|(offset, _)| *offset < end)
            .map(|(_, target)| *target)
            .collect();
        for target in targets {
            let reach = match target {
                RelocationTarget::Symbol(index) => self.symbol(index),
                RelocationTarget::Section(index) => Reach::Node(self.section_node(index)),
                _ => Reach::Nothing,
            };
            self.link(id, reach);
        }
    }

    /// Adds the edges of `.nv.callgraph` sections.
    fn read_callgraph(&mut self) {
        let file = self.file;
        for section in file.sections() {
            let by_type = matches!(section.flags(),
                SectionFlags::Elf { sh_type, .. } if sh_type.0 == SHT_CUDA_CALLGRAPH);
            if !by_type && !section.name().is_ok_and(|n| n == ".nv.callgraph") {
                continue;
            }
            let Ok(data) = section.data() else {
                self.unreadable = true;
                continue;
            };
            self.unreadable |= data.len() % 8 != 0;
            let word = |bytes: &[u8]| {
                let bytes = [bytes[0], bytes[1], bytes[2], bytes[3]];
                if file.is_little_endian() {
                    u32::from_le_bytes(bytes)
                } else {
                    u32::from_be_bytes(bytes)
                }
            };
            let mut block = CALLGRAPH_CALLS;
            for pair in data.chunks_exact(8) {
                let (first, second) = (word(&pair[..4]), word(&pair[4..]));
                if first == 0 && second >= CALLGRAPH_ADDRESS_REFERENCES {
                    block = second;
                    continue;
                }
                match block {
                    CALLGRAPH_CALLS => {
                        if let Some(caller) = self.function(first) {
                            let reach = self.symbol(SymbolIndex(second as usize));
                            self.link(caller, reach);
                        }
                    }
                    CALLGRAPH_ADDRESS_TAKEN => {
                        if let Some(function) = self.function(first) {
                            let any = self.node(Node::AddressTaken);
                            self.edges.push((any, function));
                        }
                    }
                    CALLGRAPH_INDIRECT_CALLERS => {
                        if let Some(caller) = self.function(first) {
                            self.link(caller, Reach::Node(Node::AddressTaken));
                        }
                    }
                    // CALLGRAPH_ADDRESS_REFERENCES
                    _ => {
                        if let Some(function) = self.function(second) {
                            let any = self.node(Node::AddressTaken);
                            self.edges.push((any, function));
                        }
                    }
                }
            }
        }
    }

    /// Each node's effects: its own and those of everything it reaches.
    fn propagate(&self) -> Vec<u8> {
        let mut callers = vec![Vec::new(); self.nodes.len()];
        for &(from, to) in &self.edges {
            callers[to].push(from);
        }
        let mut bits = self.direct.clone();
        let mut work: Vec<usize> = (0..bits.len()).filter(|&id| bits[id] != 0).collect();
        while let Some(callee) = work.pop() {
            for &caller in &callers[callee] {
                let joined = bits[caller] | bits[callee];
                if joined != bits[caller] {
                    bits[caller] = joined;
                    work.push(caller);
                }
            }
        }
        bits
    }
}
