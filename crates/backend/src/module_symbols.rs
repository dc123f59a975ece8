//! Module-scope variables and kernel side effects of a loaded cubin. CUPTI's `MODULE_LOADED`
//! callback hands over the cubin (an ELF image); its symbol table names the kernels and the
//! `__device__` (`.nv.global*`) and user `__constant__` (`.nv.constant*`, except bank 0, which
//! holds kernel parameters) variables. Their addresses come later from `cuModuleGetGlobal` on
//! the module handle.
//!
//! Side effects that a replay would repeat or break ([`SideEffect`]) come from calls to the
//! driver-resolved device functions: `vprintf`; `malloc`, `free`, `__cuda_syscall_aligned_malloc`
//! (`__nv_aligned_device_malloc`), `cudaMalloc`/`cudaFree` and C++ `operator new`/`delete`
//! (`_Znw*`, `_Zna*`, `_Zdl*`, `_Zda*`); `__assertfail`. Only undefined symbols count, so a
//! module's own `operator new` is judged by what it calls. A kernel has what its `.text.<kernel>`
//! section reaches, transitively and through cycles, by:
//! - relocations of text sections (relocatable and `-rdc` linked cubins call this way), and of
//!   the initialised data objects they point at (function-pointer tables, vtables), per object
//!   where the symbol has a size, per whole section otherwise;
//! - `.nv.callgraph` call edges (whole-program cubins fold device functions into the kernel's
//!   section and call through a function-address table in `.nv.constant4`, with no relocation in
//!   the code); a function recorded there as making indirect calls reaches every function whose
//!   address is taken there.
//!
//! Conservative: a side effect whose external symbol is in the symbol table but is not reached
//! from any text section, or any of them when a relocation section or the call graph cannot be
//! read or names a missing symbol, is given to every kernel of the module
//! ([`CubinSymbols::unattributed_side_effects`]).
//!
//! Not covered: calls that the cubin records neither way (its records are trusted); externals
//! other than the ones above (device-side launches, other `__cuda_syscall_*`); side effects
//! without a call. `kernels` also lists non-inlined device functions (every function symbol
//! in a `.text.` section, with whole-program cubins' `$<kernel>$<function>` copies); they get
//! side effects like kernels.
//!
//! Here: the symbol table's kernels and variables; `side_effect`: the effects and the externals
//! that have them; `reach`: the graph that attributes them to kernels.

mod reach;
mod side_effect;

use reach::SideEffects;
pub use side_effect::SideEffect;
use std::collections::{BTreeMap, BTreeSet};

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
    /// The side effects each of `kernels` can have; kernels with none are absent.
    pub side_effects: BTreeMap<String, BTreeSet<SideEffect>>,
    /// Side effects given to every kernel because their calls could not be attributed (see the
    /// module documentation); empty for a cubin whose calls were all followed.
    pub unattributed_side_effects: BTreeSet<SideEffect>,
}

impl CubinSymbols {
    /// The side effects `kernel` (a mangled name as in `kernels`) can have; empty when none, or
    /// when the kernel is not in this module.
    pub fn side_effects_of(&self, kernel: &str) -> BTreeSet<SideEffect> {
        self.side_effects.get(kernel).cloned().unwrap_or_default()
    }
}

/// Reads the symbol table of a cubin. Not an ELF image (PTX text, a fat binary): an error.
pub fn scan_cubin(image: &[u8]) -> Result<CubinSymbols, object::Error> {
    let file = object::File::parse(image)?;
    let mut symbols = CubinSymbols::default();
    let mut kernel_sections = Vec::new();
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
                kernel_sections.push(index);
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
    let effects = SideEffects::analyze(&file);
    for (name, index) in symbols.kernels.iter().zip(kernel_sections) {
        let bits = effects.of_section(index);
        if bits != 0 {
            symbols
                .side_effects
                .insert(name.clone(), SideEffect::set_of(bits));
        }
    }
    symbols.unattributed_side_effects = SideEffect::set_of(effects.everywhere);
    Ok(symbols)
}

fn section_name(file: &object::File<'_>, index: SectionIndex) -> String {
    file.section_by_index(index)
        .ok()
        .and_then(|s| s.name().ok().map(str::to_string))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests;
