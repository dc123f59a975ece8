//! The flush module's text and the fused kernel's parameters, without a GPU.
use super::*;

#[test]
fn the_module_holds_the_constant_loads_between_the_markers() {
    let text = module_ptx(GPC_LOADS).into_string().unwrap();
    let (_, rest) = text.split_once(GPC_BEGIN).unwrap();
    let (code, _) = rest.split_once(GPC_END).unwrap();
    let loads: Vec<&str> = code
        .lines()
        .filter(|l| l.contains("ld.const.u32"))
        .collect();
    assert_eq!(loads.len(), GPC_LOADS);
    // Every word of the 64 KiB of constants, once (16,384 loads of 4 bytes).
    let offsets: std::collections::BTreeSet<usize> = loads
        .iter()
        .map(|l| {
            let at = l.split('+').nth(1).unwrap();
            at.trim_end_matches("];").parse().unwrap()
        })
        .collect();
    assert_eq!(offsets.len(), 65536 / 4);
    assert_eq!(offsets.last(), Some(&(65536 - 4)));
    // Outside the markers the file is as written.
    assert_eq!(
        module_ptx(0).into_string().unwrap(),
        PTX.replace(
            "\tld.const.u32 \t%k8, [kreplay_gpc_constants];\n\tadd.s32 \t%k0, %k0, %k8;\n",
            ""
        )
    );
}

#[test]
fn only_a_cooperative_launch_has_every_block_wait_and_discard() {
    assert_eq!(fused_kernel_parameters(true), (2, 1));
    // Without a cooperative launch no block may wait for another: the last one discards.
    assert_eq!(fused_kernel_parameters(false), (1, 1));
    // The PTX knows the discard values.
    for value in ["setp.eq.u32 \t%p14, %r8, 2;", "setp.eq.u32 \t%p7, %r8, 0;"] {
        assert!(PTX.contains(value), "{value}");
    }
}

/// The module as loaded assembles for the oldest target it names and for the H200 where
/// `KREPLAY_PTXAS` names a ptxas (`.ci/run` sets it; the file alone is assembled there too).
#[test]
fn the_module_assembles_where_ptxas_is_given() {
    let Some(ptxas) = std::env::var_os("KREPLAY_PTXAS") else {
        eprintln!("KREPLAY_PTXAS is not set: the written-out module is not assembled");
        return;
    };
    let dir = std::env::temp_dir().join(format!("kreplay-flush-ptx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let source = dir.join("l2_flush.ptx");
    std::fs::write(&source, module_ptx(GPC_LOADS).as_bytes()).unwrap();
    for arch in ["sm_80", "sm_90"] {
        let status = std::process::Command::new(&ptxas)
            .arg(format!("-arch={arch}"))
            .arg("-o")
            .arg(dir.join(format!("{arch}.cubin")))
            .arg(&source)
            .status()
            .unwrap();
        assert!(status.success(), "ptxas -arch={arch} failed on the module");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
