//! Which hardware pass collects each user group ([`PassLayout`]): groups packed into passes
//! (whole groups whose union this device collects in one pass share one), and how a unit's
//! passes become executions.

use kreplay_core::backend::UnitPlan;
use kreplay_core::catalog::pack_groups;
use kreplay_cuda::debug;
use kreplay_cuda::error::CudaError;

/// The hardware passes of a profiler's groups.
pub(super) struct PassLayout {
    /// The metrics of each hardware pass (the union of the groups it collects).
    pub(super) pass_metrics: Vec<Vec<String>>,
    /// Executions each hardware pass needs: 1, or for a group of metrics that alone need
    /// several passes (`--metrics sm__throughput...`), as many as CUPTI schedules for it.
    pub(super) pass_spans: Vec<usize>,
    /// For each user group: its hardware pass, and where its metrics sit in that pass's list.
    pub(super) groups: Vec<(usize, Vec<usize>)>,
}

/// The metrics of `members` in order, each once.
fn union_metrics(groups: &[Vec<String>], members: &[usize]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for &g in members {
        for m in &groups[g] {
            if !names.contains(m) {
                names.push(m.clone());
            }
        }
    }
    names
}

/// A metric CUPTI collects by instrumenting the kernel's code (`smsp__sass_inst_executed…`,
/// `sass__inst_executed_per_opcode`): one of its `__`-separated parts begins with `sass`.
fn is_instrumented(metric: &str) -> bool {
    metric.split("__").any(|part| part.starts_with("sass"))
}

impl PassLayout {
    /// Packs `groups` into hardware passes (with `pack`; else one pass per group), asking
    /// `one_pass` how many passes a list of metrics needs. Laps `group checks` and `packing`.
    pub(super) fn pack(
        groups: &[Vec<String>],
        pack: bool,
        one_pass: impl Fn(&[String]) -> Result<usize, CudaError>,
        laps: &mut debug::Laps,
    ) -> Result<PassLayout, CudaError> {
        // A group may need several passes (the CLI allows it only for metrics that alone do
        // not fit one): it gets hardware passes of its own, never shared.
        let group_passes = groups
            .iter()
            .map(|metrics| one_pass(metrics))
            .collect::<Result<Vec<usize>, CudaError>>()?;
        laps.lap("group checks");
        let packed = if pack {
            pack_groups(groups.len(), |members| {
                if members.iter().any(|&g| group_passes[g] > 1) {
                    return Ok(false);
                }
                Ok::<bool, CudaError>(one_pass(&union_metrics(groups, members))? == 1)
            })?
        } else {
            (0..groups.len()).map(|g| vec![g]).collect()
        };
        laps.lap("packing");
        let mut pass_metrics = Vec::with_capacity(packed.len());
        let pass_spans = packed
            .iter()
            .map(|members| {
                members
                    .iter()
                    .map(|&g| group_passes[g])
                    .max()
                    .unwrap_or(1)
                    .max(1)
            })
            .collect();
        let mut layout = vec![(0, Vec::new()); groups.len()];
        for (pass, members) in packed.iter().enumerate() {
            let names = union_metrics(groups, members);
            for &g in members {
                let positions = groups[g]
                    .iter()
                    .map(|m| names.iter().position(|n| n == m).unwrap_or(0))
                    .collect();
                layout[g] = (pass, positions);
            }
            pass_metrics.push(names);
        }
        Ok(PassLayout {
            pass_metrics,
            pass_spans,
            groups: layout,
        })
    }

    /// Executions `group` alone needs (its hardware pass's span; 1 for an unknown group).
    pub(super) fn executions_of_group(&self, group: usize) -> usize {
        self.groups
            .get(group)
            .map_or(1, |(pass, _)| self.pass_spans[*pass])
    }

    /// The groups each hardware pass collects, pass by pass.
    pub(super) fn packing(&self) -> Vec<Vec<usize>> {
        let mut passes = vec![Vec::new(); self.pass_metrics.len()];
        for (group, (pass, _)) in self.groups.iter().enumerate() {
            passes[*pass].push(group);
        }
        passes
    }

    /// Whether any of `passes` collects a metric of CUPTI's instrumentation of the kernel's
    /// code (SASS metrics).
    pub(super) fn instrumented(&self, passes: &[usize]) -> bool {
        passes.iter().any(|p| {
            self.pass_metrics
                .get(*p)
                .is_some_and(|metrics| metrics.iter().any(|m| is_instrumented(m)))
        })
    }

    /// How a unit collecting `groups` (pass by pass; `None`: timestamps only) runs: which
    /// execution measures each pass, and the hardware pass of each execution.
    pub(super) fn plan(&self, groups: &[Option<usize>]) -> (UnitPlan, Vec<usize>) {
        // A pass without counters rides on the first pass's execution.
        let first = groups
            .iter()
            .flatten()
            .next()
            .and_then(|g| self.groups.get(*g))
            .map_or(usize::MAX, |(pass, _)| *pass);
        let hardware: Vec<usize> = groups
            .iter()
            .map(|g| {
                g.and_then(|g| self.groups.get(g))
                    .map_or(first, |(pass, _)| *pass)
            })
            .collect();
        let span = |p: usize| self.pass_spans.get(p).copied().unwrap_or(1);
        let (plan, order) = UnitPlan::from_hardware_passes_spanning(&hardware, span);
        let order = order.into_iter().filter(|p| *p != usize::MAX).collect();
        (plan, order)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn union_keeps_first_occurrence_order() {
        let groups = vec![
            vec!["a".to_string(), "b".to_string()],
            vec!["b".to_string(), "c".to_string()],
        ];
        assert_eq!(union_metrics(&groups, &[0, 1]), ["a", "b", "c"]);
        assert_eq!(union_metrics(&groups, &[1, 0]), ["b", "c", "a"]);
    }

    #[test]
    fn sass_metrics_are_instrumented_and_hardware_ones_are_not() {
        for m in [
            "smsp__sass_inst_executed_op_shared_ld.sum",
            "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
            "sass__inst_executed_per_opcode",
        ] {
            assert!(is_instrumented(m), "{m}");
        }
        for m in [
            "smsp__inst_executed.sum",
            "sm__warps_launched.sum",
            "lts__t_sectors_op_read.sum",
            "dram__bytes_read.sum.per_second",
        ] {
            assert!(!is_instrumented(m), "{m}");
        }
        let groups = vec![
            vec!["sm__warps_launched.sum".to_string()],
            vec!["smsp__sass_inst_executed_op_shared_ld.sum".to_string()],
        ];
        let mut laps = debug::Laps::start();
        let layout = PassLayout::pack(&groups, false, |_| Ok(1), &mut laps).unwrap();
        assert!(!layout.instrumented(&[0]));
        assert!(layout.instrumented(&[1]));
        assert!(layout.instrumented(&[0, 1]));
        assert!(!layout.instrumented(&[]));
    }
}
