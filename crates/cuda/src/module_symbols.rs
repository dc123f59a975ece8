//! Module-scope variables of a loaded cubin. CUPTI's `MODULE_LOADED` callback hands over the
//! cubin (an ELF image); its symbol table names the kernels and the `__device__` (`.nv.global*`)
//! and user `__constant__` (`.nv.constant*`, except bank 0, which holds kernel parameters)
//! variables. Their addresses come later from `cuModuleGetGlobal` on the module handle.

use object::{Object, ObjectSection, ObjectSymbol, SectionIndex, SymbolKind};

/// A variable found in a cubin's symbol table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleVariable {
    pub name: String,
    pub bytes: u64,
    /// `__constant__` (read-only for kernels, written by the host with `cudaMemcpyToSymbol`).
    pub constant: bool,
}

/// What a cubin declares.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CubinSymbols {
    /// Kernel entry points (mangled names).
    pub kernels: Vec<String>,
    pub variables: Vec<ModuleVariable>,
}

/// Reads the symbol table of a cubin. Not an ELF image (PTX text, a fat binary): an error.
pub fn scan_cubin(image: &[u8]) -> Result<CubinSymbols, object::Error> {
    let file = object::File::parse(image)?;
    let mut symbols = CubinSymbols::default();
    for symbol in file.symbols() {
        let Ok(name) = symbol.name() else { continue };
        if name.is_empty() {
            continue;
        }
        let Some(index) = symbol.section_index() else {
            continue;
        };
        let section_name = section_name(&file, index);
        match symbol.kind() {
            SymbolKind::Text if section_name.starts_with(".text.") => {
                symbols.kernels.push(name.to_string());
            }
            SymbolKind::Data | SymbolKind::Unknown if symbol.size() > 0 => {
                let constant = if section_name.starts_with(".nv.global") {
                    false
                } else if section_name.starts_with(".nv.constant")
                    && !section_name.starts_with(".nv.constant0")
                {
                    true
                } else {
                    continue;
                };
                symbols.variables.push(ModuleVariable {
                    name: name.to_string(),
                    bytes: symbol.size(),
                    constant,
                });
            }
            _ => {}
        }
    }
    Ok(symbols)
}

fn section_name(file: &object::File<'_>, index: SectionIndex) -> String {
    file.section_by_index(index)
        .ok()
        .and_then(|s| s.name().ok().map(str::to_string))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use object::write::{Object as WriteObject, Symbol, SymbolSection};
    use object::{Architecture, BinaryFormat, Endianness, SectionKind, SymbolFlags, SymbolScope};

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
}
