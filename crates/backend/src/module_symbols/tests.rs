use super::reach::{
    CALLGRAPH_ADDRESS_REFERENCES, CALLGRAPH_ADDRESS_TAKEN, CALLGRAPH_CALLS,
    CALLGRAPH_INDIRECT_CALLERS,
};
use super::*;
use object::write::{
    Object as WriteObject, Relocation, SectionId, Symbol, SymbolId, SymbolSection,
};
use object::{
    Architecture, BinaryFormat, Endianness, RelocationEncoding, RelocationFlags, RelocationKind,
    SectionKind, SymbolFlags, SymbolScope,
};

/// Builds a small ELF shaped like a cubin: a kernel in `.text.<name>`, a `__device__`
/// counter in `.nv.global`, a `__constant__` table in `.nv.constant3` and the kernel's
/// parameter bank in `.nv.constant0.<name>`.
fn fake_cubin() -> Vec<u8> {
    let mut obj = WriteObject::new(BinaryFormat::Elf, Architecture::X86_64, Endianness::Little);
    let mut add = |section: &str, kind: SectionKind, sym: &str, size: u64, skind| {
        let id = obj.add_section(Vec::new(), section.as_bytes().to_vec(), kind);
        obj.append_section_data(id, &vec![0u8; size as usize], 4);
        obj.add_symbol(Symbol {
            name: sym.as_bytes().to_vec(),
            value: 0,
            size,
            kind: skind,
            scope: SymbolScope::Dynamic,
            weak: false,
            section: SymbolSection::Section(id),
            flags: SymbolFlags::None,
        });
    };
    add(
        ".text._Z3incPj",
        SectionKind::Text,
        "_Z3incPj",
        64,
        SymbolKind::Text,
    );
    add(
        ".nv.global",
        SectionKind::Data,
        "counter",
        4,
        SymbolKind::Data,
    );
    add(
        ".nv.constant3",
        SectionKind::ReadOnlyData,
        "table",
        64,
        SymbolKind::Data,
    );
    add(
        ".nv.constant0._Z3incPj",
        SectionKind::ReadOnlyData,
        "params",
        8,
        SymbolKind::Data,
    );
    add(
        ".nv.global.init",
        SectionKind::Data,
        "seeded",
        16,
        SymbolKind::Data,
    );
    obj.write().unwrap()
}

#[test]
fn finds_kernels_device_and_constant_variables() {
    let symbols = scan_cubin(&fake_cubin()).unwrap();
    assert_eq!(symbols.kernels, vec!["_Z3incPj".to_string()]);
    assert!(symbols.side_effects.is_empty());
    assert!(symbols.unattributed_side_effects.is_empty());
    let vars: Vec<_> = symbols
        .variables
        .iter()
        .map(|v| (v.name.as_str(), v.bytes, v.constant))
        .collect();
    assert_eq!(
        vars,
        vec![
            ("counter", 4, false),
            ("table", 64, true),
            ("seeded", 16, false)
        ]
    );
}

#[test]
fn ptx_text_is_not_a_cubin() {
    assert!(scan_cubin(b".version 8.0\n.target sm_90\n").is_err());
}

/// A cubin-shaped ELF: functions in `.text.<name>`, calls as relocations.
struct Image {
    obj: WriteObject<'static>,
}

impl Image {
    fn new() -> Self {
        Image {
            obj: WriteObject::new(BinaryFormat::Elf, Architecture::X86_64, Endianness::Little),
        }
    }

    fn symbol(
        &mut self,
        name: &str,
        kind: SymbolKind,
        section: SymbolSection,
        value: u64,
        size: u64,
    ) -> SymbolId {
        self.obj.add_symbol(Symbol {
            name: name.as_bytes().to_vec(),
            value,
            size,
            kind,
            scope: SymbolScope::Dynamic,
            weak: false,
            section,
            flags: SymbolFlags::None,
        })
    }

    fn section(&mut self, name: &str, kind: SectionKind, size: u64) -> SectionId {
        let id = self
            .obj
            .add_section(Vec::new(), name.as_bytes().to_vec(), kind);
        self.obj
            .append_section_data(id, &vec![0u8; size as usize], 8);
        id
    }

    /// A function in its own `.text.<name>` section.
    fn function(&mut self, name: &str) -> (SectionId, SymbolId) {
        let section = self.section(&format!(".text.{name}"), SectionKind::Text, 64);
        (
            section,
            self.symbol(
                name,
                SymbolKind::Text,
                SymbolSection::Section(section),
                0,
                64,
            ),
        )
    }

    /// An undefined function, resolved by the driver.
    fn external(&mut self, name: &str) -> SymbolId {
        self.symbol(name, SymbolKind::Text, SymbolSection::Undefined, 0, 0)
    }

    /// A relocation at `offset` of `from` against `to`.
    fn refer(&mut self, from: SectionId, offset: u64, to: SymbolId) {
        let flags = RelocationFlags::Generic {
            kind: RelocationKind::Absolute,
            encoding: RelocationEncoding::Generic,
            size: 64,
        };
        let relocation = Relocation {
            offset,
            symbol: to,
            addend: 0,
            flags,
        };
        self.obj.add_relocation(from, relocation).unwrap();
    }

    fn bytes(self) -> Vec<u8> {
        self.obj.write().unwrap()
    }
}

fn effects(symbols: &CubinSymbols, kernel: &str) -> Vec<SideEffect> {
    symbols.side_effects_of(kernel).into_iter().collect()
}

#[test]
fn kernels_have_the_side_effects_of_what_they_call_transitively() {
    let mut image = Image::new();
    let vprintf = image.external("vprintf");
    let malloc = image.external("malloc");
    let assertfail = image.external("__assertfail");
    let new = image.external("_Znwm");
    let (a, _) = image.function("kern_a");
    let (b, _) = image.function("kern_b");
    image.function("kern_c");
    let (d, _) = image.function("kern_d");
    let (helper, helper_sym) = image.function("helper");
    image.refer(a, 16, vprintf);
    image.refer(b, 16, helper_sym);
    image.refer(helper, 32, malloc);
    image.refer(d, 0, assertfail);
    image.refer(d, 8, new);
    let symbols = scan_cubin(&image.bytes()).unwrap();

    for kernel in ["kern_a", "kern_b", "kern_c", "kern_d", "helper"] {
        assert!(symbols.kernels.iter().any(|k| k == kernel), "{kernel}");
    }
    assert_eq!(effects(&symbols, "kern_a"), vec![SideEffect::DevicePrintf]);
    assert_eq!(effects(&symbols, "kern_b"), vec![SideEffect::DeviceHeap]);
    assert_eq!(effects(&symbols, "helper"), vec![SideEffect::DeviceHeap]);
    assert!(effects(&symbols, "kern_c").is_empty());
    assert!(!symbols.side_effects.contains_key("kern_c"));
    assert_eq!(
        effects(&symbols, "kern_d"),
        vec![SideEffect::DeviceHeap, SideEffect::Assert]
    );
    assert!(symbols.unattributed_side_effects.is_empty());
    assert!(effects(&symbols, "not_in_this_module").is_empty());
}

#[test]
fn cycles_of_device_functions_terminate() {
    let mut image = Image::new();
    let vprintf = image.external("vprintf");
    let (ping, ping_sym) = image.function("ping");
    let (pong, pong_sym) = image.function("pong");
    let (kern, _) = image.function("kern_loop");
    let (lone, lone_sym) = image.function("lone");
    let (quiet, _) = image.function("kern_quiet");
    image.refer(ping, 0, pong_sym);
    image.refer(pong, 0, ping_sym);
    image.refer(pong, 8, vprintf);
    image.refer(pong, 16, pong_sym);
    image.refer(kern, 0, ping_sym);
    image.refer(lone, 0, lone_sym);
    image.refer(quiet, 0, lone_sym);
    let symbols = scan_cubin(&image.bytes()).unwrap();
    for function in ["kern_loop", "ping", "pong"] {
        assert_eq!(effects(&symbols, function), vec![SideEffect::DevicePrintf]);
    }
    assert!(effects(&symbols, "kern_quiet").is_empty());
    assert!(effects(&symbols, "lone").is_empty());
}

#[test]
fn function_pointer_tables_are_followed_per_object() {
    let mut image = Image::new();
    let vprintf = image.external("vprintf");
    let (printer, printer_sym) = image.function("printer");
    image.refer(printer, 0, vprintf);
    let init = image.section(".nv.global.init", SectionKind::Data, 16);
    let table = image.symbol(
        "table",
        SymbolKind::Data,
        SymbolSection::Section(init),
        0,
        8,
    );
    let text = image.symbol("$str", SymbolKind::Data, SymbolSection::Section(init), 8, 8);
    image.refer(init, 0, printer_sym);
    let (by_pointer, _) = image.function("kern_fp");
    let (by_string, _) = image.function("kern_str");
    image.refer(by_pointer, 0, table);
    image.refer(by_string, 0, text);
    let symbols = scan_cubin(&image.bytes()).unwrap();
    assert_eq!(effects(&symbols, "kern_fp"), vec![SideEffect::DevicePrintf]);
    assert!(effects(&symbols, "kern_str").is_empty());
    assert!(symbols.unattributed_side_effects.is_empty());
}

/// A whole-program cubin as ptxas writes it: the externals' addresses sit in a table in
/// `.nv.constant4`, the code calls through it with no relocation, and `.nv.callgraph` says
/// which kernel calls what. `missing`: the call graph names a symbol that is not there.
fn whole_program(callgraph: bool, missing: bool) -> Vec<u8> {
    let build = |pairs: &[(u32, u32)]| {
        let mut image = Image::new();
        let vprintf = image.external("vprintf");
        let malloc = image.external("malloc");
        let table = image.section(".nv.constant4", SectionKind::ReadOnlyData, 16);
        image.refer(table, 0, vprintf);
        image.refer(table, 8, malloc);
        let (kp, _) = image.function("kp");
        for name in ["kh", "kq", "kind", "target"] {
            image.function(name);
        }
        if callgraph {
            let section = image.section(".nv.callgraph", SectionKind::Other, 0);
            let data: Vec<u8> = pairs
                .iter()
                .flat_map(|(a, b)| [a.to_le_bytes(), b.to_le_bytes()])
                .flatten()
                .collect();
            image.obj.append_section_data(section, &data, 4);
        }
        // A relocation of no interest, so that the module has some.
        let own = image.obj.section_symbol(kp);
        image.refer(kp, 0, own);
        image.bytes()
    };
    // The symbol indices, from a build with a call graph of the same size.
    let first = build(&[(0, 0); 14]);
    let file = object::File::parse(&*first).unwrap();
    let index = |name: &str| {
        let symbol = file.symbols().find(|s| s.name() == Ok(name)).unwrap();
        symbol.index().0 as u32
    };
    let [vprintf, malloc, kp, kh, kind, target] =
        ["vprintf", "malloc", "kp", "kh", "kind", "target"].map(index);
    build(&[
        (0, CALLGRAPH_CALLS),
        (kp, vprintf),
        (kh, malloc),
        (kh, vprintf),
        (target, vprintf),
        (0, CALLGRAPH_ADDRESS_TAKEN),
        (target, 1),
        (0, CALLGRAPH_INDIRECT_CALLERS),
        (kind, 1),
        (0, CALLGRAPH_ADDRESS_REFERENCES),
        (kp, target),
        (kp, if missing { 0xffff_0000 } else { target }),
        (0, 0),
        (0, 0),
    ])
}

#[test]
fn whole_program_cubins_use_the_call_graph() {
    let symbols = scan_cubin(&whole_program(true, false)).unwrap();
    assert_eq!(effects(&symbols, "kp"), vec![SideEffect::DevicePrintf]);
    assert_eq!(
        effects(&symbols, "kh"),
        vec![SideEffect::DevicePrintf, SideEffect::DeviceHeap]
    );
    assert!(effects(&symbols, "kq").is_empty());
    // An indirect call reaches the functions whose address is taken.
    assert_eq!(effects(&symbols, "kind"), vec![SideEffect::DevicePrintf]);
    assert!(symbols.unattributed_side_effects.is_empty());
}

#[test]
fn calls_that_cannot_be_attributed_go_to_every_kernel() {
    let symbols = scan_cubin(&whole_program(false, false)).unwrap();
    let both = vec![SideEffect::DevicePrintf, SideEffect::DeviceHeap];
    for kernel in ["kp", "kh", "kq", "kind", "target"] {
        assert_eq!(effects(&symbols, kernel), both, "{kernel}");
    }
    assert_eq!(
        symbols
            .unattributed_side_effects
            .iter()
            .copied()
            .collect::<Vec<_>>(),
        both
    );

    let symbols = scan_cubin(&whole_program(true, true)).unwrap();
    assert_eq!(effects(&symbols, "kq"), both);

    // An undefined vprintf that nothing refers to.
    let mut image = Image::new();
    image.external("vprintf");
    image.function("kern");
    let symbols = scan_cubin(&image.bytes()).unwrap();
    assert_eq!(effects(&symbols, "kern"), vec![SideEffect::DevicePrintf]);
}

#[test]
fn unreadable_relocations_make_every_kernel_suspect() {
    let mut image = Image::new();
    let vprintf = image.external("vprintf");
    let malloc = image.external("malloc");
    let (a, _) = image.function("kern_a");
    let (b, _) = image.function("kern_b");
    image.function("kern_c");
    image.refer(a, 0, vprintf);
    image.refer(b, 0, malloc);
    let mut bytes = image.bytes();
    assert_eq!(
        effects(&scan_cubin(&bytes).unwrap(), "kern_a"),
        vec![SideEffect::DevicePrintf]
    );

    // Point the contents of `.rela.text.kern_a` past the end of the image.
    let file = object::File::parse(&*bytes).unwrap();
    let rela = file.section_by_name(".rela.text.kern_a").unwrap().index().0;
    let shoff = u64::from_le_bytes(bytes[0x28..0x30].try_into().unwrap()) as usize;
    let sh_offset = shoff + rela * 64 + 0x18;
    let past_end = (bytes.len() as u64 + 4096).to_le_bytes();
    bytes[sh_offset..sh_offset + 8].copy_from_slice(&past_end);

    let symbols = scan_cubin(&bytes).unwrap();
    let both = vec![SideEffect::DevicePrintf, SideEffect::DeviceHeap];
    for kernel in ["kern_a", "kern_b", "kern_c"] {
        assert_eq!(effects(&symbols, kernel), both, "{kernel}");
    }
}

#[test]
fn external_names() {
    use SideEffect::*;
    for (name, effect) in [
        ("vprintf", Some(DevicePrintf)),
        ("malloc", Some(DeviceHeap)),
        ("free", Some(DeviceHeap)),
        ("__cuda_syscall_aligned_malloc", Some(DeviceHeap)),
        ("__nv_aligned_device_malloc", Some(DeviceHeap)),
        ("_Znwm", Some(DeviceHeap)),
        ("_Znam", Some(DeviceHeap)),
        ("_ZdlPv", Some(DeviceHeap)),
        ("_ZdaPv", Some(DeviceHeap)),
        ("_ZdlPvm", Some(DeviceHeap)),
        ("_ZnwmSt11align_val_t", Some(DeviceHeap)),
        ("__assertfail", Some(Assert)),
        ("__cuda_syscall_cudaGetParameterBufferV2", None),
        ("cudaLaunchDeviceV2", None),
        ("_Z6helperv", None),
    ] {
        assert_eq!(SideEffect::of_external(name), effect, "{name}");
    }
}
