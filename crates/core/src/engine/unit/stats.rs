//! How units ended, for the line the engine prints at its end.

/// How units ended, for the line [`crate::Engine::finish`] prints: what cuts windows short.
#[derive(Debug, Default)]
pub(in crate::engine) struct WindowStats {
    windows: u64,
    dispatches: u64,
    /// Calls units stayed open across.
    spanned: u64,
    captures: u64,
    captured_bytes: u64,
    closed_by: std::collections::BTreeMap<String, u64>,
}

impl WindowStats {
    pub(super) fn record(
        &mut self,
        members: usize,
        reason: &str,
        spanned: u64,
        captures: u64,
        bytes: u64,
    ) {
        self.windows += 1;
        self.dispatches += members as u64;
        self.spanned += spanned;
        self.captures += captures;
        self.captured_bytes += bytes;
        *self.closed_by.entry(reason.to_string()).or_default() += 1;
    }

    /// `replay windows closed by: cuMemcpyDtoH_v2 40, full 2; 84 dispatches in 42 windows`
    /// (most frequent first, so that a cut-off tail loses the least useful part). Only units
    /// that could hold several dispatches count (not per-dispatch replay).
    pub(super) fn line(&self) -> Option<String> {
        if self.windows == 0 {
            return None;
        }
        let mut reasons: Vec<(&String, &u64)> = self.closed_by.iter().collect();
        reasons.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let reasons: Vec<String> = reasons.iter().map(|(r, n)| format!("{r} {n}")).collect();
        let mut spanned = String::new();
        if self.spanned > 0 {
            spanned = format!(
                "; windows stayed open across {} other call(s)",
                self.spanned
            );
            if self.captures > 0 {
                spanned += &format!(
                    ", re-applying {} captured write(s) of {} bytes in later passes",
                    self.captures, self.captured_bytes
                );
            }
        }
        Some(format!(
            "kreplay: replay windows closed by: {}; {} dispatches in {} windows ({:.1} per window){spanned}",
            reasons.join(", "),
            self.dispatches,
            self.windows,
            self.dispatches as f64 / self.windows as f64
        ))
    }
}
