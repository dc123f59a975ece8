//! How deeply an input file nests, measured before it is parsed: the YAML parser takes time
//! quadratic in the nesting (200k levels of `[` ran for minutes), while serde_json refuses more
//! than 128 levels at once. A kreplay input needs four (`jobs`, a job, `pmc_groups`, a group).

/// The most nesting an input file may have: serde_json's limit, so that both forms agree.
pub const MAX_DEPTH: usize = 128;

/// The deepest nesting of `text` as YAML (or JSON) writes it: flow brackets (`[`, `{`) outside
/// quotes and comments, plus block levels (more-indented lines, and `- ` entries that open a
/// sequence on the same line). An estimate that never counts less than the parser nests; it
/// stops counting at `limit + 1`.
pub fn nesting(text: &str, limit: usize) -> usize {
    let mut deepest = 0;
    let mut flow = 0usize;
    let mut indents: Vec<usize> = Vec::new();
    let mut quote: Option<char> = None;
    for line in text.lines() {
        let mut chars = line.chars().peekable();
        if quote.is_none() && flow == 0 {
            let indent = line.len() - line.trim_start_matches(' ').len();
            let rest = line[indent..].trim_start();
            if rest.is_empty() || rest.starts_with('#') {
                continue;
            }
            while indents.last().is_some_and(|&top| top >= indent) {
                indents.pop();
            }
            indents.push(indent);
            // `- - - x` opens one sequence per dash on one line.
            let mut compact = rest;
            let mut dashes = 0;
            while let Some(after) = compact.strip_prefix("- ") {
                dashes += 1;
                compact = after.trim_start();
            }
            deepest = deepest.max(indents.len() + dashes);
        }
        let mut previous = ' ';
        while let Some(c) = chars.next() {
            match quote {
                Some('"') if c == '\\' => {
                    chars.next();
                }
                Some(q) if c == q => {
                    // '' inside a single-quoted string is a quote, not its end.
                    if q == '\'' && chars.peek() == Some(&'\'') {
                        chars.next();
                    } else {
                        quote = None;
                    }
                }
                Some(_) => {}
                None => match c {
                    '"' | '\'' => quote = Some(c),
                    '#' if previous.is_whitespace() => break,
                    '[' | '{' => {
                        flow += 1;
                        deepest = deepest.max(indents.len() + flow);
                    }
                    ']' | '}' => flow = flow.saturating_sub(1),
                    _ => {}
                },
            }
            if deepest > limit {
                return deepest;
            }
            previous = c;
        }
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_usual_input_nests_a_few_levels() {
        let text =
            "jobs:\n  - pmc: [A, B]\n  - pmc_groups: [[A, B], [C]]\n    pmc_group_interval: 2\n";
        let depth = nesting(text, MAX_DEPTH);
        assert!((3..=6).contains(&depth), "{depth}");
    }

    #[test]
    fn brackets_in_quotes_and_comments_do_not_count() {
        let text = "jobs:\n  - kernel_include_regex: \"[[[[[[\\\"[[\" # [[[[[\n    output_file: '[[''[['\n";
        assert!(nesting(text, MAX_DEPTH) <= 3);
    }

    #[test]
    fn deep_flow_block_and_compact_nesting_are_seen_and_counting_stops_at_the_limit() {
        assert_eq!(nesting(&"[".repeat(200_000), 10), 11);
        assert!(nesting(&format!("jobs:\n{}x\n", "- ".repeat(500)), MAX_DEPTH) > MAX_DEPTH);
        let block: String = (0..200)
            .map(|i| format!("{}k{i}:\n", " ".repeat(i)))
            .collect();
        assert!(nesting(&block, MAX_DEPTH) > MAX_DEPTH);
        assert_eq!(nesting("{\"jobs\": [{\"pmc\": [\"A\"]}]}", MAX_DEPTH), 5);
    }
}
